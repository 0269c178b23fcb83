//! A minimal, bounded HDF5 reader: the superblock (v0–v3), the root group's object header
//! (v1 or v2, with continuation blocks) and its compact attribute messages holding strings
//! (fixed-length, or variable-length in a global heap). That is all Keras `.h5` files need to
//! say which Keras wrote them (`keras_version`, `backend`, `model_config`, `training_config`).
//!
//! No pure-Rust HDF5 crate reads attributes without pulling in the C library or a large
//! dependency tree, so this reads the few structures itself (HDF5 File Format Specification
//! v3.0, sections II–IV). Every address and length is checked against the file size and a
//! byte budget; dense attribute storage (fractal heaps) is reported, not read.

use std::fs::File;
use std::os::unix::fs::FileExt;

const SIGNATURE: &[u8; 8] = b"\x89HDF\r\n\x1a\n";
const MAX_CHUNK: u64 = 16 * 1024 * 1024;
const MAX_BLOCKS: usize = 64;

/// The root group's attributes: name → string value (`None` when not a string).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct RootAttrs {
    /// Root attributes by name, with their value when it is a string.
    pub attrs: Vec<(String, Option<String>)>,
    /// The root group keeps (some) attributes in dense storage, not read here.
    pub dense: bool,
}

struct H5<'a> {
    file: &'a File,
    len: u64,
    base: u64,
    o: usize,
    l: usize,
}

fn uint(b: &[u8]) -> u64 {
    b.iter()
        .take(8)
        .enumerate()
        .fold(0u64, |v, (i, x)| v | (u64::from(*x) << (8 * i)))
}

fn get(b: &[u8], at: usize, n: usize) -> Result<&[u8], String> {
    at.checked_add(n)
        .and_then(|end| b.get(at..end))
        .ok_or_else(|| format!("HDF5 structure truncated (wanted {n} bytes at {at})"))
}

impl H5<'_> {
    fn read(&self, addr: u64, n: u64) -> Result<Vec<u8>, String> {
        let at = self.base.checked_add(addr).ok_or("HDF5 address overflow")?;
        if n > MAX_CHUNK || at.checked_add(n).is_none_or(|e| e > self.len) {
            return Err(format!(
                "HDF5 block at {at} of {n} bytes lies beyond the file's {} bytes (truncated or corrupt)",
                self.len
            ));
        }
        let mut buf = vec![0u8; n as usize];
        self.file
            .read_exact_at(&mut buf, at)
            .map_err(|e| format!("cannot read HDF5 block at {at}: {e}"))?;
        Ok(buf)
    }

    /// Messages (type, data) of the object header at `addr`.
    fn messages(&self, addr: u64) -> Result<Vec<(u16, Vec<u8>)>, String> {
        let mut out = Vec::new();
        let head = self.read(
            addr,
            16.min(self.len.saturating_sub(self.base.saturating_add(addr))),
        )?;
        let mut blocks: Vec<(u64, u64, bool)> = Vec::new();
        let v2 = head.starts_with(b"OHDR");
        let mut creation_order = false;
        if v2 {
            let flags = *head.get(5).ok_or("short OHDR")?;
            creation_order = flags & 0x04 != 0;
            let mut off = 6u64;
            if flags & 0x20 != 0 {
                off += 16;
            }
            if flags & 0x10 != 0 {
                off += 4;
            }
            let w = 1u64 << (flags & 3);
            let size = uint(&self.read(addr.saturating_add(off), w)?);
            blocks.push((addr.saturating_add(off + w), size, true));
        } else {
            if head.first() != Some(&1) {
                return Err("unknown HDF5 object header version".into());
            }
            let size = uint(get(&head, 8, 4)?);
            blocks.push((addr.saturating_add(16), size, false));
        }
        let mut i = 0;
        while i < blocks.len() {
            if i >= MAX_BLOCKS {
                return Err("too many HDF5 object header continuation blocks".into());
            }
            let (at, size, first) = blocks[i];
            i += 1;
            let mut buf = self.read(at, size)?;
            if v2 && !first {
                if !buf.starts_with(b"OCHK") {
                    return Err("HDF5 continuation block without OCHK signature".into());
                }
                buf.drain(..4);
                let n = buf.len().saturating_sub(4);
                buf.truncate(n); // checksum
            }
            let mut p = 0usize;
            loop {
                let hdr = if v2 {
                    4 + usize::from(creation_order) * 2
                } else {
                    8
                };
                if p + hdr > buf.len() {
                    break;
                }
                let (ty, sz) = if v2 {
                    (u16::from(buf[p]), uint(&buf[p + 1..p + 3]) as usize)
                } else {
                    (
                        uint(&buf[p..p + 2]) as u16,
                        uint(&buf[p + 2..p + 4]) as usize,
                    )
                };
                p += hdr;
                let data = get(&buf, p, sz)?.to_vec();
                p += if v2 { sz } else { sz.div_ceil(8) * 8 };
                if ty == 0x10 {
                    let a = uint(get(&data, 0, self.o)?);
                    let n = uint(get(&data, self.o, self.l)?);
                    blocks.push((a, n, false));
                }
                out.push((ty, data));
            }
        }
        Ok(out)
    }

    fn vlen_string(&self, heap: u64, index: u64) -> Result<String, String> {
        let head = self.read(heap, 8 + self.l as u64)?;
        if !head.starts_with(b"GCOL") {
            return Err("HDF5 global heap without GCOL signature".into());
        }
        let size = uint(&head[8..8 + self.l]);
        let col = self.read(heap, size)?;
        let mut p = 8 + self.l;
        while p + 8 + self.l <= col.len() {
            let idx = uint(&col[p..p + 2]);
            let n = uint(&col[p + 8..p + 8 + self.l]) as usize;
            let start = p + 8 + self.l;
            if idx == 0 {
                break;
            }
            let data = get(&col, start, n)?;
            if idx == index {
                return Ok(String::from_utf8_lossy(data).into_owned());
            }
            p = start + n.div_ceil(8) * 8;
        }
        Err(format!("HDF5 global heap object {index} not found"))
    }

    fn attribute(&self, d: &[u8]) -> Result<(String, Option<String>), String> {
        let version = *d.first().ok_or("empty attribute message")?;
        let name_size = uint(get(d, 2, 2)?) as usize;
        let dt_size = uint(get(d, 4, 2)?) as usize;
        let ds_size = uint(get(d, 6, 2)?) as usize;
        let pad = |n: usize| if version == 1 { n.div_ceil(8) * 8 } else { n };
        let mut p = if version == 3 { 9 } else { 8 };
        let name_raw = get(d, p, name_size)?;
        let name =
            String::from_utf8_lossy(name_raw.split(|&b| b == 0).next().unwrap_or(b"")).into_owned();
        p += pad(name_size);
        let dt = get(d, p, dt_size)?;
        p += pad(dt_size);
        let ds = get(d, p, ds_size)?;
        p += pad(ds_size);
        let data = d.get(p..).unwrap_or(&[]);
        let class = dt.first().map(|b| b & 0x0f).unwrap_or(0xff);
        let elem = uint(get(dt, 4, 4)?) as usize;
        // Scalar or a single element only; arrays of strings are not needed here.
        let ds_version = ds.first().copied().unwrap_or(0);
        let rank = ds.get(1).copied().unwrap_or(0) as usize;
        let dims_at = if ds_version == 1 { 8 } else { 4 };
        let mut count = 1u64;
        for k in 0..rank {
            count = count.saturating_mul(uint(get(ds, dims_at + k * self.l, self.l)?));
        }
        if count != 1 {
            return Ok((name, None));
        }
        let value = match class {
            3 => {
                let raw = get(data, 0, elem)?;
                let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
                Some(String::from_utf8_lossy(&raw[..end]).into_owned())
            }
            9 if dt.get(1).map(|b| b & 0x0f) == Some(1) => {
                let heap = uint(get(data, 4, self.o)?);
                let idx = uint(get(data, 4 + self.o, 4)?);
                Some(self.vlen_string(heap, idx)?)
            }
            _ => None,
        };
        Ok((name, value))
    }
}

/// True when the file starts with (or has at a user-block offset) the HDF5 signature.
pub fn find_superblock(file: &File, len: u64) -> Option<u64> {
    let mut at = 0u64;
    while at + 8 <= len && at <= 1 << 20 {
        let mut sig = [0u8; 8];
        if file.read_exact_at(&mut sig, at).is_ok() && &sig == SIGNATURE {
            return Some(at);
        }
        at = if at == 0 { 512 } else { at * 2 };
    }
    None
}

/// Read the root group's attributes of the HDF5 file `file` (`len` bytes).
pub fn root_attributes(file: &File, len: u64) -> Result<RootAttrs, String> {
    let sb_at = find_superblock(file, len).ok_or("no HDF5 signature: not an HDF5 file")?;
    let mut sb = vec![0u8; 128.min((len - sb_at) as usize)];
    file.read_exact_at(&mut sb, sb_at)
        .map_err(|e| format!("cannot read the HDF5 superblock: {e}"))?;
    let version = *sb.get(8).ok_or("HDF5 superblock truncated")?;
    let (o, l, root_addr, base);
    match version {
        0 | 1 => {
            o = *get(&sb, 13, 1)?.first().unwrap_or(&8) as usize;
            l = *get(&sb, 14, 1)?.first().unwrap_or(&8) as usize;
            let a = if version == 0 { 24 } else { 28 };
            base = uint(get(&sb, a, o)?);
            // Root group symbol table entry: link name offset, then object header address.
            root_addr = uint(get(&sb, a + 4 * o + o, o)?);
        }
        2 | 3 => {
            o = *get(&sb, 9, 1)?.first().unwrap_or(&8) as usize;
            l = *get(&sb, 10, 1)?.first().unwrap_or(&8) as usize;
            base = uint(get(&sb, 12, o)?);
            root_addr = uint(get(&sb, 12 + 3 * o, o)?);
        }
        v => return Err(format!("unsupported HDF5 superblock version {v}")),
    }
    if !matches!(o, 2 | 4 | 8) || !matches!(l, 2 | 4 | 8) {
        return Err(format!("bad HDF5 offset/length sizes {o}/{l} (corrupt)"));
    }
    let h5 = H5 {
        file,
        len,
        base: base.max(sb_at),
        o,
        l,
    };
    let mut out = RootAttrs::default();
    for (ty, data) in h5.messages(root_addr)? {
        match ty {
            0x0c => out.attrs.push(h5.attribute(&data)?),
            0x15 => {
                // Attribute info: dense storage when the fractal heap address is defined.
                let flags = data.get(1).copied().unwrap_or(0);
                let at = 2 + if flags & 1 != 0 { 2 } else { 0 };
                if let Ok(h) = get(&data, at, o) {
                    if h.iter().any(|&b| b != 0xff) {
                        out.dense = true;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(out)
}
