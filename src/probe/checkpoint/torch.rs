//! PyTorch `torch.save` files: the zip format (torch >= 1.6: `ARCHIVE/data.pkl`,
//! `ARCHIVE/version`, `ARCHIVE/byteorder`, `ARCHIVE/data/N`) and the legacy format (a magic
//! number pickle followed by more pickles and raw storages).
//!
//! The pickle is never unpickled: its opcodes are scanned to list the `module.name` globals it
//! needs (GLOBAL / INST, and STACK_GLOBAL with its two strings tracked through the memo) and the
//! storage locations of tensors, then the globals are checked against the list that
//! `torch.load(weights_only=True)` allows ([`super::torch_allowlist`]).

pub use super::pickle::{scan, Scan};
use super::torch_allowlist;
use crate::snapshot::checkpoint::TorchCheckpoint;
use std::collections::BTreeSet;
use std::io::Read;

/// The legacy format's magic number (`torch/serialization.py` `MAGIC_NUMBER`).
pub const LEGACY_MAGIC: u128 = 0x1950a86a20f9469cfc6c;
/// Most bytes of a pickle we scan.
pub const MAX_PICKLE: u64 = 64 * 1024 * 1024;
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
