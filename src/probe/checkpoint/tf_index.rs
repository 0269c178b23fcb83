//! TensorFlow checkpoint indexes (`PREFIX.index`): a LevelDB-style sorted table whose values
//! are `BundleEntryProto`s, read without TensorFlow.
//!
//! Layout (tensorflow/core/lib/io/table*, tensor_bundle.proto): a 48-byte footer at the end
//! (metaindex and index block handles as varints, padding, magic `0xdb4775248b80fb57`); the
//! index block maps separator keys to data-block handles; each block is prefix-compressed
//! entries + a restart array + a 5-byte trailer (compression type, CRC). The empty key holds the
//! `BundleHeaderProto`. Only the index file is read — never a data shard — and every length is
//! checked against the file size and a byte budget before anything is allocated.

use super::proto::{self, Value};
use std::fs::File;
use std::os::unix::fs::FileExt;

/// The table magic number TensorFlow writes in the footer.
pub const TABLE_MAGIC: u64 = 0xdb47_7524_8b80_fb57;
const FOOTER_LEN: u64 = 48;
const BLOCK_TRAILER_LEN: u64 = 5;
/// Largest single block we read.
const MAX_BLOCK: u64 = 32 * 1024 * 1024;
/// Most bytes read from one index file in total.
const MAX_TOTAL: u64 = 128 * 1024 * 1024;

/// The bundle header (`BundleHeaderProto`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// How many data shards the checkpoint has.
    pub num_shards: u32,
    /// Whether the tensors are stored big-endian.
    pub big_endian: bool,
    /// The bundle format version, when stated.
    pub version: Option<i64>,
}

/// One tensor entry (`BundleEntryProto`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Entry {
    /// The tensor's key.
    pub name: String,
    /// Its TensorFlow dtype code.
    pub dtype: u32,
    /// Its shape.
    pub shape: Vec<i64>,
    /// The data shard holding it.
    pub shard: u32,
    /// Its byte offset in that shard.
    pub offset: u64,
    /// Its size in bytes.
    pub size: u64,
}

/// A parsed index: its header and its tensor entries in key order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bundle {
    /// The bundle header (the empty key), when present.
    pub header: Option<Header>,
    /// Every tensor entry, in index order.
    pub entries: Vec<Entry>,
}

/// One table entry: key and value bytes.
pub type KeyValue = (Vec<u8>, Vec<u8>);

/// A block handle: offset and size of a block's contents (trailer excluded).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Handle {
    offset: u64,
    size: u64,
}

fn handle(buf: &[u8], pos: &mut usize) -> Result<Handle, String> {
    let offset = proto::read_varint(buf, pos).map_err(|e| format!("bad block handle: {e}"))?;
    let size = proto::read_varint(buf, pos).map_err(|e| format!("bad block handle: {e}"))?;
    Ok(Handle { offset, size })
}

struct Source<'a> {
    file: &'a File,
    len: u64,
    budget: u64,
}

impl Source<'_> {
    fn read(&mut self, offset: u64, size: u64, what: &str) -> Result<Vec<u8>, String> {
        let end = offset.checked_add(size).filter(|&e| e <= self.len);
        if end.is_none() {
            return Err(format!(
                "{what} at offset {offset} claims {size} bytes, beyond the file's {} bytes (truncated or corrupt)",
                self.len
            ));
        }
        if size > self.budget {
            return Err(format!(
                "{what} of {size} bytes is larger than the {MAX_TOTAL}-byte reading budget"
            ));
        }
        self.budget -= size;
        // `size` is bounded by the file length and the budget above.
        let mut buf = vec![0u8; size as usize];
        self.file
            .read_exact_at(&mut buf, offset)
            .map_err(|e| format!("cannot read {what}: {e}"))?;
        Ok(buf)
    }

    fn block(&mut self, h: Handle, what: &str) -> Result<Vec<u8>, String> {
        if h.size > MAX_BLOCK {
            return Err(format!(
                "{what} claims {} bytes (limit {MAX_BLOCK}; corrupt?)",
                h.size
            ));
        }
        let mut buf = self.read(h.offset, h.size + BLOCK_TRAILER_LEN, what)?;
        let n = h.size as usize;
        let compression = buf[n];
        let stored = u32::from_le_bytes([buf[n + 1], buf[n + 2], buf[n + 3], buf[n + 4]]);
        if masked_crc32c(&buf[..=n]) != stored {
            return Err(format!("{what}: block checksum mismatch (corrupt)"));
        }
        buf.truncate(n);
        match compression {
            0 => Ok(buf),
            1 => Err(format!(
                "{what} is snappy-compressed; envdoctor reads only uncompressed tables (TensorFlow writes its indexes uncompressed)"
            )),
            c => Err(format!("{what} has unknown compression type {c} (corrupt?)")),
        }
    }
}

const CRC32C_TABLE: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0x82f6_3b78
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
};

/// CRC-32C (Castagnoli) of `data`, masked as LevelDB stores it in block trailers.
pub fn masked_crc32c(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc = CRC32C_TABLE[((crc ^ u32::from(b)) & 0xff) as usize] ^ (crc >> 8);
    }
    let crc = !crc;
    crc.rotate_right(15).wrapping_add(0xa282_ead8)
}

/// Decode the entries of one block (prefix-compressed keys; the restart array bounds them).
fn block_entries(block: &[u8], what: &str) -> Result<Vec<KeyValue>, String> {
    if block.len() < 4 {
        return Err(format!("{what} is shorter than its restart count"));
    }
    let n = block.len();
    let num_restarts = u64::from(u32::from_le_bytes([
        block[n - 4],
        block[n - 3],
        block[n - 2],
        block[n - 1],
    ]));
    let restarts_len = num_restarts
        .checked_mul(4)
        .and_then(|x| x.checked_add(4))
        .filter(|&x| x <= n as u64)
        .ok_or_else(|| format!("{what} claims {num_restarts} restart points, more than fit"))?;
    let data = &block[..n - restarts_len as usize];
    let mut out = Vec::new();
    let mut key: Vec<u8> = Vec::new();
    let mut pos = 0usize;
    while pos < data.len() {
        let at = pos;
        let bad = |e: proto::ProtoError| format!("{what}: bad entry at byte {at}: {e}");
        let shared = proto::read_varint(data, &mut pos).map_err(bad)?;
        let non_shared = proto::read_varint(data, &mut pos).map_err(bad)?;
        let value_len = proto::read_varint(data, &mut pos).map_err(bad)?;
        if shared > key.len() as u64 {
            return Err(format!(
                "{what}: entry shares {shared} key bytes but the previous key has {}",
                key.len()
            ));
        }
        let left = (data.len() - pos) as u64;
        if non_shared.checked_add(value_len).is_none_or(|t| t > left) {
            return Err(format!(
                "{what}: entry claims {non_shared}+{value_len} bytes, only {left} left"
            ));
        }
        key.truncate(shared as usize);
        let k_end = pos + non_shared as usize;
        key.extend_from_slice(&data[pos..k_end]);
        let v_end = k_end + value_len as usize;
        out.push((key.clone(), data[k_end..v_end].to_vec()));
        pos = v_end;
    }
    Ok(out)
}

/// Read every entry of the table in `file` (`len` bytes long).
pub fn read_table(file: &File, len: u64) -> Result<Vec<KeyValue>, String> {
    if len < FOOTER_LEN {
        return Err(format!(
            "{len} bytes is too short for a checkpoint index (footer is {FOOTER_LEN} bytes)"
        ));
    }
    let mut src = Source {
        file,
        len,
        budget: MAX_TOTAL,
    };
    let footer = src.read(len - FOOTER_LEN, FOOTER_LEN, "the footer")?;
    let magic = u64::from_le_bytes(footer[40..48].try_into().unwrap_or([0; 8]));
    if magic != TABLE_MAGIC {
        return Err(format!(
            "no table magic number at the end (found {magic:#018x}): not a checkpoint index, or truncated"
        ));
    }
    let mut pos = 0usize;
    let _metaindex = handle(&footer[..40], &mut pos)?;
    let index = handle(&footer[..40], &mut pos)?;
    let index_block = src.block(index, "the index block")?;
    let mut out = Vec::new();
    for (i, (_sep, value)) in block_entries(&index_block, "the index block")?
        .into_iter()
        .enumerate()
    {
        let h = handle(&value, &mut 0)?;
        let what = format!("data block {i}");
        let block = src.block(h, &what)?;
        out.extend(block_entries(&block, &what)?);
    }
    Ok(out)
}

fn parse_header(v: &[u8]) -> Result<Header, String> {
    let mut h = Header::default();
    for f in proto::fields(v) {
        let (n, val) = f.map_err(|e| format!("bad BundleHeaderProto: {e}"))?;
        match (n, val) {
            (1, Value::Varint(x)) => h.num_shards = u32::try_from(x).unwrap_or(u32::MAX),
            (2, Value::Varint(x)) => h.big_endian = x == 1,
            (3, Value::Bytes(b)) => {
                for f in proto::fields(b) {
                    if let Ok((1, Value::Varint(p))) = f {
                        h.version = Some(p as i64);
                    }
                }
            }
            _ => {}
        }
    }
    Ok(h)
}

fn parse_shape(b: &[u8]) -> Result<Vec<i64>, proto::ProtoError> {
    let mut dims = Vec::new();
    for f in proto::fields(b) {
        if let (2, Value::Bytes(dim)) = f? {
            let mut size = 0i64;
            for g in proto::fields(dim) {
                if let (1, Value::Varint(s)) = g? {
                    size = s as i64;
                }
            }
            dims.push(size);
        }
    }
    Ok(dims)
}

fn parse_entry(name: String, v: &[u8]) -> Result<Entry, String> {
    let mut e = Entry {
        name,
        ..Entry::default()
    };
    for f in proto::fields(v) {
        let (n, val) = f.map_err(|err| format!("bad BundleEntryProto for {:?}: {err}", e.name))?;
        match (n, val) {
            (1, Value::Varint(x)) => e.dtype = u32::try_from(x).unwrap_or(0),
            (2, Value::Bytes(b)) => {
                e.shape =
                    parse_shape(b).map_err(|err| format!("bad shape for {:?}: {err}", e.name))?
            }
            (3, Value::Varint(x)) => e.shard = u32::try_from(x).unwrap_or(u32::MAX),
            (4, Value::Varint(x)) => e.offset = x,
            (5, Value::Varint(x)) => e.size = x,
            _ => {}
        }
    }
    Ok(e)
}

/// Read a checkpoint index file into its header and entries.
pub fn read_bundle(file: &File, len: u64) -> Result<Bundle, String> {
    let mut b = Bundle::default();
    for (k, v) in read_table(file, len)? {
        if k.is_empty() {
            b.header = Some(parse_header(&v)?);
        } else {
            let name = String::from_utf8_lossy(&k).into_owned();
            b.entries.push(parse_entry(name, &v)?);
        }
    }
    Ok(b)
}

/// TensorFlow's `DataType` enum value as a name.
pub fn dtype_name(d: u32) -> String {
    let s = match d {
        1 => "float32",
        2 => "float64",
        3 => "int32",
        4 => "uint8",
        5 => "int16",
        6 => "int8",
        7 => "string",
        8 => "complex64",
        9 => "int64",
        10 => "bool",
        11 => "qint8",
        12 => "quint8",
        13 => "qint32",
        14 => "bfloat16",
        15 => "qint16",
        16 => "quint16",
        17 => "uint16",
        18 => "complex128",
        19 => "float16",
        20 => "resource",
        21 => "variant",
        22 => "uint32",
        23 => "uint64",
        _ => return format!("dtype_{d}"),
    };
    s.to_string()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    /// A one-entry-per-block table in TF's layout, for unit tests of the decoder only (the
    /// integration tests read indexes written by TensorFlow itself).
    pub(crate) fn build_table(entries: &[(&[u8], &[u8])], compression: u8) -> Vec<u8> {
        let mut file = Vec::new();
        let mut index = Vec::new();
        let mut last: &[u8] = b"";
        let mut data = Vec::new();
        for (k, v) in entries {
            let shared = k.iter().zip(last).take_while(|(a, b)| a == b).count();
            varint(&mut data, shared as u64);
            varint(&mut data, (k.len() - shared) as u64);
            varint(&mut data, v.len() as u64);
            data.extend_from_slice(&k[shared..]);
            data.extend_from_slice(v);
            last = k;
        }
        data.extend_from_slice(&0u32.to_le_bytes());
        data.extend_from_slice(&1u32.to_le_bytes());
        let data_handle = (file.len() as u64, data.len() as u64);
        file.extend_from_slice(&data);
        file.push(compression);
        let mut covered = data.clone();
        covered.push(compression);
        file.extend_from_slice(&masked_crc32c(&covered).to_le_bytes());
        let mut hv = Vec::new();
        varint(&mut hv, data_handle.0);
        varint(&mut hv, data_handle.1);
        varint(&mut index, 0);
        varint(&mut index, 1);
        varint(&mut index, hv.len() as u64);
        index.push(0xff);
        index.extend_from_slice(&hv);
        index.extend_from_slice(&0u32.to_le_bytes());
        index.extend_from_slice(&1u32.to_le_bytes());
        let index_handle = (file.len() as u64, index.len() as u64);
        file.extend_from_slice(&index);
        file.push(0);
        let mut covered = index.clone();
        covered.push(0);
        file.extend_from_slice(&masked_crc32c(&covered).to_le_bytes());
        let mut footer = Vec::new();
        varint(&mut footer, 0);
        varint(&mut footer, 0);
        varint(&mut footer, index_handle.0);
        varint(&mut footer, index_handle.1);
        footer.resize(40, 0);
        footer.extend_from_slice(&TABLE_MAGIC.to_le_bytes());
        file.extend_from_slice(&footer);
        file
    }

    fn write(bytes: &[u8]) -> (tempfile::NamedTempFile, File) {
        let mut t = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut t, bytes).unwrap();
        let f = File::open(t.path()).unwrap();
        (t, f)
    }

    #[test]
    fn decodes_prefix_compressed_keys_and_bundle_entries() {
        // dtype float, shape [3, 4], shard 0, offset 16, size 48
        let entry = [
            0x08, 0x01, 0x12, 0x08, 0x12, 0x02, 0x08, 0x03, 0x12, 0x02, 0x08, 0x04, 0x20, 0x10,
            0x28, 0x30,
        ];
        let header = [0x08, 0x01, 0x1a, 0x02, 0x08, 0x01];
        let t = build_table(
            &[
                (b"", &header),
                (b"dense/bias", &entry),
                (b"dense/kernel", &entry),
            ],
            0,
        );
        let (_t, f) = write(&t);
        let b = read_bundle(&f, t.len() as u64).unwrap();
        assert_eq!(
            b.header,
            Some(Header {
                num_shards: 1,
                big_endian: false,
                version: Some(1)
            })
        );
        let names: Vec<_> = b.entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["dense/bias", "dense/kernel"]);
        assert_eq!(b.entries[1].shape, [3, 4]);
        assert_eq!((b.entries[1].offset, b.entries[1].size), (16, 48));
    }

    #[test]
    fn crc32c_matches_the_reference_vector() {
        // RFC 3720 B.4: CRC-32C of 32 zero bytes is 0x8a9136aa.
        let crc = masked_crc32c(&[0u8; 32])
            .wrapping_sub(0xa282_ead8)
            .rotate_left(15);
        assert_eq!(crc, 0x8a91_36aa);
    }

    #[test]
    fn a_flipped_byte_is_a_checksum_error() {
        let mut t = build_table(&[(b"a", b"value")], 0);
        t[4] ^= 1;
        let (_t, f) = write(&t);
        let err = read_table(&f, t.len() as u64).unwrap_err();
        assert!(err.contains("checksum"), "{err}");
    }

    #[test]
    fn snappy_blocks_and_hostile_handles_are_errors() {
        let t = build_table(&[(b"a", b"")], 1);
        let (_t, f) = write(&t);
        let err = read_table(&f, t.len() as u64).unwrap_err();
        assert!(err.contains("snappy"), "{err}");

        // An index handle claiming 2^60 bytes.
        let mut t = build_table(&[(b"a", b"")], 0);
        let n = t.len();
        let mut footer = Vec::new();
        varint(&mut footer, 0);
        varint(&mut footer, 0);
        varint(&mut footer, 0);
        varint(&mut footer, 1 << 60);
        footer.resize(40, 0);
        t[n - 48..n - 8].copy_from_slice(&footer);
        let (_t2, f) = write(&t);
        let err = read_table(&f, t.len() as u64).unwrap_err();
        assert!(err.contains("claims"), "{err}");

        let (_t3, f) = write(b"short");
        assert!(read_table(&f, 5).unwrap_err().contains("too short"));
    }
}
