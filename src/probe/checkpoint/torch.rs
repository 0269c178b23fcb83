//! PyTorch `torch.save` files: the zip format (torch >= 1.6: `ARCHIVE/data.pkl`,
//! `ARCHIVE/version`, `ARCHIVE/byteorder`, `ARCHIVE/data/N`) and the legacy format (a magic
//! number pickle followed by more pickles and raw storages).
//!
//! The pickle is never unpickled: its opcodes are scanned to list the `module.name` globals it
//! needs (GLOBAL / INST, and STACK_GLOBAL with its two strings tracked through the memo) and the
//! storage locations of tensors, then the globals are checked against the list that
//! `torch.load(weights_only=True)` allows ([`super::torch_allowlist`]).

use super::torch_allowlist;
use crate::snapshot::checkpoint::TorchCheckpoint;
use std::collections::{BTreeSet, HashMap};
use std::io::Read;

/// The legacy format's magic number (`torch/serialization.py` `MAGIC_NUMBER`).
pub const LEGACY_MAGIC: u128 = 0x1950a86a20f9469cfc6c;
/// Most bytes of a pickle we scan.
pub const MAX_PICKLE: u64 = 64 * 1024 * 1024;
/// Most memoized strings remembered (for STACK_GLOBAL through BINGET); keeps memory flat.
const MAX_MEMO: usize = 1 << 20;

/// What the opcode scan found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Scan {
    pub protocol: Option<u8>,
    pub globals: BTreeSet<String>,
    pub locations: BTreeSet<String>,
    pub stack_global: bool,
    /// Bytes consumed, up to and including STOP.
    pub end: usize,
    /// Integers seen by LONG1 (the legacy magic number is one).
    pub first_long: Option<u128>,
    /// String literals pushed (in the legacy format's last pickle, the list of storage keys,
    /// one per storage).
    pub strings: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Item {
    Str(String),
    Other,
}

fn take<'a>(buf: &'a [u8], pos: &mut usize, n: u64) -> Result<&'a [u8], String> {
    let left = (buf.len() - *pos) as u64;
    if n > left {
        return Err(format!(
            "pickle truncated: an argument of {n} bytes at byte {} but only {left} left",
            *pos
        ));
    }
    let s = &buf[*pos..*pos + n as usize];
    *pos += n as usize;
    Ok(s)
}

fn le(bytes: &[u8]) -> u64 {
    let mut v = 0u64;
    for (i, b) in bytes.iter().take(8).enumerate() {
        v |= u64::from(*b) << (8 * i);
    }
    v
}

fn line<'a>(buf: &'a [u8], pos: &mut usize) -> Result<&'a [u8], String> {
    let rest = &buf[*pos..];
    let Some(n) = rest.iter().position(|&b| b == b'\n') else {
        return Err(format!(
            "pickle truncated: unterminated line at byte {}",
            *pos
        ));
    };
    *pos += n + 1;
    Ok(&rest[..n])
}

fn is_location(s: &str) -> bool {
    let base = s.split(':').next().unwrap_or("");
    matches!(
        base,
        "cpu" | "cuda" | "mps" | "xpu" | "meta" | "hpu" | "privateuseone"
    )
}

/// Scan one pickle starting at `buf[0]`, up to its STOP opcode.
pub fn scan(buf: &[u8]) -> Result<Scan, String> {
    let mut s = Scanner {
        buf,
        pos: 0,
        stack: Vec::new(),
        memo: HashMap::new(),
        memo_next: 0,
        out: Scan::default(),
    };
    loop {
        if s.stack.len() > 64 {
            // Only the top few items matter; keep memory flat on deep pickles.
            s.stack.drain(..32);
        }
        let Some(&op) = buf.get(s.pos) else {
            return Err(format!(
                "pickle truncated at byte {} (no STOP opcode)",
                s.pos
            ));
        };
        let at = s.pos;
        s.pos += 1;
        match op {
            b'.' => {
                s.out.end = s.pos;
                return Ok(s.out);
            }
            0x80 => s.out.protocol = Some(s.take(1)?[0]),
            0x95 => {
                s.take(8)?;
            }
            // GLOBAL and INST: two newline-terminated lines.
            b'c' | b'i' => s.global()?,
            0x93 => s.stack_global(),
            // Strings.
            b'X' | b'T' => s.sized_string(4)?,
            0x8c | b'U' => s.sized_string(1)?,
            0x8d => s.sized_string(8)?,
            b'V' | b'S' => s.line_string()?,
            // Bytes and other length-prefixed data.
            b'B' | 0x8b => s.sized_data(4)?,
            b'C' => s.sized_data(1)?,
            0x8a => s.long1()?,
            0x8e | 0x96 => s.sized_data(8)?,
            // Memo.
            0x94 => s.memoize(),
            b'q' | b'r' | b'p' => {
                let idx = s.memo_index(op)?;
                s.memo_put(idx);
            }
            b'h' | b'j' | b'g' => {
                let idx = s.memo_index(op)?;
                s.memo_get(idx);
            }
            // Persistent ids: torch's storage tuples ('storage', type, key, location, size).
            b'Q' | b'P' => s.persistent_id(op)?,
            // Fixed-size arguments.
            b'J' | 0x84 => s.skip(4)?,
            b'K' | 0x82 => s.skip(1)?,
            b'M' | 0x83 => s.skip(2)?,
            b'G' => s.skip(8)?,
            b'I' | b'L' | b'F' => s.skip_line()?,
            // No arguments.
            b'(' | b')' | b']' | b'}' | b'N' | 0x88 | 0x89 | 0x8f | 0x85 | 0x86 | 0x87 | b't'
            | b'l' | b'd' | b'R' | 0x81 | 0x92 | b'o' | b'b' | b'a' | b'e' | b's' | b'u' | 0x90
            | 0x91 | b'0' | b'1' | b'2' | 0x97 | 0x98 => {
                s.stack.push(Item::Other);
            }
            other => {
                return Err(format!(
                    "not a pickle: unknown opcode {other:#04x} at byte {at}"
                ))
            }
        }
    }
}

/// The opcode scan under way: the pickle, the read position, the top of the stack, the
/// memoized strings and what was found so far.
struct Scanner<'a> {
    buf: &'a [u8],
    pos: usize,
    stack: Vec<Item>,
    memo: HashMap<u64, String>,
    memo_next: u64,
    out: Scan,
}

impl<'a> Scanner<'a> {
    /// The next `n` bytes of argument.
    fn take(&mut self, n: u64) -> Result<&'a [u8], String> {
        take(self.buf, &mut self.pos, n)
    }

    /// The next newline-terminated argument, without its newline.
    fn line(&mut self) -> Result<&'a [u8], String> {
        line(self.buf, &mut self.pos)
    }

    /// A little-endian length or index argument `width` bytes wide.
    fn sized(&mut self, width: u64) -> Result<u64, String> {
        Ok(le(self.take(width)?))
    }

    /// Push a string literal (and count it).
    fn push_str(&mut self, b: &[u8]) {
        self.out.strings += 1;
        self.stack
            .push(Item::Str(String::from_utf8_lossy(b).into_owned()));
    }

    /// GLOBAL / INST: `module` and `name` lines.
    fn global(&mut self) -> Result<(), String> {
        let module = String::from_utf8_lossy(self.line()?).into_owned();
        let name = String::from_utf8_lossy(self.line()?).into_owned();
        self.out.globals.insert(format!("{module}.{name}"));
        self.stack.push(Item::Other);
        Ok(())
    }

    /// STACK_GLOBAL: module and name are the two strings on top of the stack, when known.
    fn stack_global(&mut self) {
        self.out.stack_global = true;
        let name = self.stack.pop();
        let module = self.stack.pop();
        match (module, name) {
            (Some(Item::Str(m)), Some(Item::Str(n))) => {
                self.out.globals.insert(format!("{m}.{n}"));
            }
            _ => {
                self.out.globals.insert("<unresolved STACK_GLOBAL>".into());
            }
        }
        self.stack.push(Item::Other);
    }

    /// A string whose length is a `width`-byte argument.
    fn sized_string(&mut self, width: u64) -> Result<(), String> {
        let n = self.sized(width)?;
        let b = self.take(n)?;
        self.push_str(b);
        Ok(())
    }

    /// A string on one line (quotes of the protocol 0 `STRING` removed).
    fn line_string(&mut self) -> Result<(), String> {
        let l = self.line()?;
        let l = l
            .strip_prefix(b"'")
            .and_then(|x| x.strip_suffix(b"'"))
            .unwrap_or(l);
        self.push_str(l);
        Ok(())
    }

    /// Bytes (or other data) whose length is a `width`-byte argument: skipped.
    fn sized_data(&mut self, width: u64) -> Result<(), String> {
        let n = self.sized(width)?;
        self.take(n)?;
        self.stack.push(Item::Other);
        Ok(())
    }

    /// LONG1: the first one (up to 16 bytes) is remembered.
    fn long1(&mut self) -> Result<(), String> {
        let n = self.sized(1)?;
        let bytes = self.take(n)?;
        if self.out.first_long.is_none() && bytes.len() <= 16 {
            let mut v = 0u128;
            for (i, b) in bytes.iter().enumerate() {
                v |= u128::from(*b) << (8 * i);
            }
            self.out.first_long = Some(v);
        }
        self.stack.push(Item::Other);
        Ok(())
    }

    /// MEMOIZE: the top of the stack under the next memo index.
    fn memoize(&mut self) {
        if let (Some(Item::Str(s)), true) = (self.stack.last(), self.memo.len() < MAX_MEMO) {
            self.memo.insert(self.memo_next, s.clone());
        }
        self.memo_next += 1;
    }

    /// The memo index argument of PUT / GET (`q`/`h` one byte, `r`/`j` four, `p`/`g` a line).
    fn memo_index(&mut self, op: u8) -> Result<u64, String> {
        Ok(match op {
            b'q' | b'h' => u64::from(self.take(1)?[0]),
            b'r' | b'j' => self.sized(4)?,
            _ => String::from_utf8_lossy(self.line()?)
                .trim()
                .parse()
                .unwrap_or(u64::MAX),
        })
    }

    /// PUT: the top of the stack under memo index `idx`.
    fn memo_put(&mut self, idx: u64) {
        if let (Some(Item::Str(s)), true) = (self.stack.last(), self.memo.len() < MAX_MEMO) {
            self.memo.insert(idx, s.clone());
        }
    }

    /// GET: push what memo index `idx` holds.
    fn memo_get(&mut self, idx: u64) {
        self.stack.push(match self.memo.get(&idx) {
            Some(s) => Item::Str(s.clone()),
            None => Item::Other,
        });
    }

    /// PERSID / BINPERSID: a storage location among the recent strings is recorded.
    fn persistent_id(&mut self, op: u8) -> Result<(), String> {
        if op == b'P' {
            self.line()?;
        }
        let recent: Vec<&str> = self
            .stack
            .iter()
            .rev()
            .take(8)
            .filter_map(|i| match i {
                Item::Str(s) => Some(s.as_str()),
                Item::Other => None,
            })
            .collect();
        if let Some(loc) = recent.iter().find(|s| is_location(s)) {
            self.out.locations.insert((*loc).to_string());
        }
        self.stack.push(Item::Other);
        Ok(())
    }

    /// An opcode with an `n`-byte argument that does not matter.
    fn skip(&mut self, n: u64) -> Result<(), String> {
        self.take(n)?;
        self.stack.push(Item::Other);
        Ok(())
    }

    /// An opcode with a line argument that does not matter.
    fn skip_line(&mut self) -> Result<(), String> {
        self.line()?;
        self.stack.push(Item::Other);
        Ok(())
    }
}

/// Fill the weights-only verdict from the globals.
fn verdict(ck: &mut TorchCheckpoint, scans: &[Scan]) {
    let mut globals = BTreeSet::new();
    let mut locations = BTreeSet::new();
    let mut stack_global = false;
    for s in scans {
        globals.extend(s.globals.iter().cloned());
        locations.extend(s.locations.iter().cloned());
        stack_global |= s.stack_global;
        ck.pickle_protocol = ck.pickle_protocol.max(s.protocol);
    }
    ck.unsafe_globals = globals
        .iter()
        .filter(|g| !torch_allowlist::is_allowed(g))
        .cloned()
        .collect();
    // The weights-only unpickler has no STACK_GLOBAL opcode at all (protocol >= 4 pickles).
    ck.needs_weights_only_false = !ck.unsafe_globals.is_empty() || stack_global;
    ck.globals = globals.into_iter().collect();
    ck.storage_locations = locations.into_iter().collect();
}

/// Inspect a zip-format file.
pub fn inspect_zip(file: std::fs::File) -> Result<TorchCheckpoint, String> {
    let mut zip =
        zip::ZipArchive::new(file).map_err(|e| format!("not a readable zip archive: {e}"))?;
    let names: Vec<String> = zip
        .file_names()
        .filter_map(|n| n.ok().map(|c| c.into_owned()))
        .collect();
    let pkl = names
        .iter()
        .find(|n| n.ends_with("/data.pkl") && n.matches('/').count() == 1)
        .cloned()
        .ok_or("zip archive without ARCHIVE/data.pkl: not a torch.save file")?;
    let archive = pkl.trim_end_matches("/data.pkl").to_string();
    let mut ck = TorchCheckpoint {
        zip: true,
        archive_name: Some(archive.clone()),
        ..Default::default()
    };
    let mut small = |name: &str| -> Option<String> {
        let mut f = zip.by_name(name).ok()?;
        let mut s = String::new();
        f.by_ref().take(64).read_to_string(&mut s).ok()?;
        Some(s.trim().to_string())
    };
    ck.archive_version =
        small(&format!("{archive}/version")).or_else(|| small(&format!("{archive}/.data/version")));
    ck.byteorder = small(&format!("{archive}/byteorder"));
    let data_prefix = format!("{archive}/data/");
    ck.storage_count = names.iter().filter(|n| n.starts_with(&data_prefix)).count() as u64;
    let mut f = zip
        .by_name(&pkl)
        .map_err(|e| format!("cannot open {pkl}: {e}"))?;
    if f.size() > MAX_PICKLE {
        return Err(format!(
            "{pkl} is {} bytes, more than the {MAX_PICKLE} envdoctor scans",
            f.size()
        ));
    }
    let mut buf = Vec::new();
    f.by_ref()
        .take(MAX_PICKLE)
        .read_to_end(&mut buf)
        .map_err(|e| format!("cannot read {pkl}: {e}"))?;
    let s = scan(&buf).map_err(|e| format!("{pkl}: {e}"))?;
    verdict(&mut ck, &[s]);
    Ok(ck)
}

/// Inspect a legacy-format file from its first bytes (`buf`, a bounded prefix).
pub fn inspect_legacy(buf: &[u8]) -> Result<TorchCheckpoint, String> {
    let first = scan(buf).map_err(|e| format!("legacy torch file: {e}"))?;
    if first.first_long != Some(LEGACY_MAGIC) {
        return Err("Invalid magic number; not a torch.save file (or corrupt)".into());
    }
    let mut ck = TorchCheckpoint::default();
    let mut scans = vec![];
    let mut pos = first.end;
    // protocol version, sys_info, the object, the storage keys.
    for what in ["protocol version", "sys_info", "object", "storage keys"] {
        let s = scan(&buf[pos..]).map_err(|e| format!("legacy torch file, {what} pickle: {e}"))?;
        pos += s.end;
        scans.push(s);
    }
    // The last pickle is the list of storage keys that `torch.save` wrote, one per storage, and
    // the raw storages follow it. (The storages are not zip members as in the new format, so
    // counting `data/N` entries, as for zip files, finds none.)
    ck.storage_count = scans.last().map_or(0, |s| s.strings);
    verdict(&mut ck, &scans);
    Ok(ck)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stack_global_strings_are_tracked_through_the_memo() {
        // PROTO 4, SHORT_BINUNICODE 'pathlib' MEMOIZE, SHORT_BINUNICODE 'PosixPath' MEMOIZE,
        // STACK_GLOBAL, then BINGET 0, BINGET 1, STACK_GLOBAL again, STOP.
        let mut p = vec![0x80, 4, 0x8c, 7];
        p.extend_from_slice(b"pathlib");
        p.extend_from_slice(&[0x94, 0x8c, 9]);
        p.extend_from_slice(b"PosixPath");
        p.extend_from_slice(&[0x94, 0x93, b'h', 0, b'h', 1, 0x93, b'.']);
        let s = scan(&p).unwrap();
        assert_eq!(s.protocol, Some(4));
        assert!(s.stack_global);
        assert_eq!(
            s.globals.into_iter().collect::<Vec<_>>(),
            ["pathlib.PosixPath"]
        );
    }

    #[test]
    fn a_legacy_checkpoint_counts_its_storages_as_torch_does() {
        // Written by torch 2.15.0 with `_use_new_zipfile_serialization=False`
        // (fixtures/checkpoints/make_torch_legacy_9.py); the JSON is what torch read back.
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/checkpoints");
        let buf = std::fs::read(dir.join("torch_legacy_9.pt")).unwrap();
        let want: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("torch_legacy_9.json")).unwrap())
                .unwrap();
        let ck = inspect_legacy(&buf).unwrap();
        assert!(!ck.zip);
        assert_eq!(ck.storage_count, want["storages"].as_u64().unwrap());
        assert_eq!(ck.storage_count, 9);
        assert_eq!(ck.storage_locations, ["cpu"]);
        assert!(!ck.needs_weights_only_false, "{:?}", ck.unsafe_globals);
    }

    #[test]
    fn truncated_and_hostile_pickles_are_errors() {
        // BINUNICODE claiming 2^32-1 bytes.
        let p = [0x80, 2, b'X', 0xff, 0xff, 0xff, 0xff, b'a'];
        assert!(scan(&p).unwrap_err().contains("truncated"));
        // BINUNICODE8 claiming 2^60 bytes.
        let mut p = vec![0x80, 4, 0x8d];
        p.extend_from_slice(&(1u64 << 60).to_le_bytes());
        assert!(scan(&p).unwrap_err().contains("truncated"));
        assert!(scan(b"\x80\x02c").unwrap_err().contains("truncated"));
        assert!(scan(b"<html>").unwrap_err().contains("unknown opcode"));
    }
}
