//! `/etc/ld.so.cache`: the binary cache `ldconfig` writes and `ld.so` consults after
//! LD_LIBRARY_PATH and DT_RUNPATH, and whether it is stale against `/etc/ld.so.conf`.
//!
//! Both layouts glibc has used are read:
//! - the old one (`ld.so-1.7.0`): a count, 12-byte entries `{flags, key, value}` whose string
//!   offsets count from the end of the entry array; `ldconfig -c compat` still writes it, followed
//!   by the new one (then this parser reads the new part, which carries more);
//! - the new one (`glibc-ld.so.cache1.1`): 24-byte entries `{flags, key, value, osversion,
//!   hwcap}` whose string offsets count from the start of the new header, plus an extension
//!   directory whose `glibc-hwcaps` section names the `glibc-hwcaps/<subdir>` an entry belongs to
//!   (bit 62 of `hwcap` set: the low 32 bits index that section).
//!
//! Lookup ([`LdCache::lookup`]) follows glibc's `search_cache`: only entries whose flags are
//! `libc6,x86-64` (0x0303) count for an x86-64 process; among them an entry in an active
//! `glibc-hwcaps` subdirectory wins by priority, otherwise the plain entry.
//!
//! Staleness ([`stale_files`]): a directory `ldconfig` scans (the `ld.so.conf` lines, `include`
//! globs followed, plus the trusted system dirs) holding a shared library whose DT_SONAME the
//! cache does not list: `ldconfig` was not re-run after it was installed, so only the search
//! path can find it.

use crate::probe::libs::elf;
use crate::root::Root;
use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Magic of the old format.
pub const OLD_MAGIC: &[u8] = b"ld.so-1.7.0";
/// Magic + version of the new format.
pub const NEW_MAGIC: &[u8] = b"glibc-ld.so.cache1.1";
/// `FLAG_ELF_LIBC6 | FLAG_X8664_LIB64`: what an x86-64 process accepts.
pub const FLAGS_X86_64: i32 = 0x0303;
const HWCAP_EXTENSION: u64 = 1 << 62;
const EXTENSION_MAGIC: u32 = 0xEAA4_2174;
const TAG_GLIBC_HWCAPS: u32 = 1;
/// More entries than any real cache has; a guard against hostile counts.
const MAX_ENTRIES: usize = 1 << 20;

/// Which layouts the file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheFormat {
    /// `glibc-ld.so.cache1.1` only (glibc ≥ 2.32 default).
    New,
    /// `ld.so-1.7.0` only.
    Old,
    /// The old layout followed by the new one (`ldconfig -c compat`).
    OldNew,
}

impl CacheFormat {
    /// `new`, `old`, `old+new` (the snapshot's `cuda.ld_cache.format`).
    pub fn as_str(self) -> &'static str {
        match self {
            CacheFormat::New => "new",
            CacheFormat::Old => "old",
            CacheFormat::OldNew => "old+new",
        }
    }
}

/// One cache entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheEntry {
    /// The soname (`libcudart.so.12`).
    pub key: String,
    /// The path it maps to (a machine path).
    pub value: String,
    /// `ldconfig` flags (0x0303 = `libc6,x86-64`, 0x0003 = `libc6` i386, ...).
    pub flags: i32,
    /// The `glibc-hwcaps` subdirectory (`x86-64-v3`) this entry lives in, when any.
    pub hwcaps: Option<String>,
}

impl CacheEntry {
    /// The flags as `ldconfig -p` prints them (`libc6,x86-64`).
    pub fn flags_label(&self) -> String {
        let kind = match self.flags & 0xff {
            0 => "libc4",
            1 => "ELF",
            2 => "libc5",
            3 => "libc6",
            _ => "unknown",
        };
        let arch = match (self.flags & 0xff00) >> 8 {
            0 => "",
            1 => ",64bit",
            2 => ",IA-64",
            3 => ",x86-64",
            4 => ",64bit",
            5 => ",64bit",
            6 => ",N32",
            7 => ",64bit",
            8 => ",x32",
            9 => ",hard-float",
            10 => ",AArch64",
            _ => ",unknown",
        };
        format!("{kind}{arch}")
    }
}

/// A parsed cache.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LdCache {
    /// The layout(s) found.
    pub format: Option<CacheFormat>,
    /// Entries in file order (ldconfig sorts them, most specific first).
    pub entries: Vec<CacheEntry>,
}

/// Why a cache could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CacheError {
    #[error("not an ld.so.cache (unknown magic)")]
    /// The file does not start with a known ld.so.cache magic.
    BadMagic,
    #[error("truncated ld.so.cache: {0}")]
    /// The file ends inside this part.
    Truncated(&'static str),
    #[error("corrupt ld.so.cache: {0}")]
    /// A value is out of range.
    Corrupt(String),
}

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(off..off.checked_add(4)?)?.try_into().ok()?,
    ))
}
fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        b.get(off..off.checked_add(8)?)?.try_into().ok()?,
    ))
}
fn str_at(b: &[u8], off: usize) -> Option<String> {
    let rest = b.get(off..)?;
    let end = rest.iter().position(|c| *c == 0)?;
    Some(String::from_utf8_lossy(&rest[..end]).into_owned())
}

/// Parse the bytes of an `ld.so.cache` (little-endian x86-64 caches; a big-endian cache is an
/// error).
pub fn parse(bytes: &[u8]) -> Result<LdCache, CacheError> {
    if bytes.starts_with(NEW_MAGIC) {
        return Ok(LdCache {
            format: Some(CacheFormat::New),
            entries: parse_new(bytes, 0)?,
        });
    }
    if !bytes.starts_with(OLD_MAGIC) {
        return Err(CacheError::BadMagic);
    }
    // struct cache_file { char magic[11]; unsigned int nlibs; struct file_entry libs[]; }
    let nlibs = u32_at(bytes, 12).ok_or(CacheError::Truncated("old header"))? as usize;
    if nlibs > MAX_ENTRIES {
        return Err(CacheError::Corrupt(format!("{nlibs} entries")));
    }
    let entries_end = 16 + nlibs * 12;
    if entries_end > bytes.len() {
        return Err(CacheError::Truncated("old entries"));
    }
    // The new layout, when present, follows the old entries, aligned to 8 bytes.
    let new_at = [entries_end, entries_end.next_multiple_of(8)]
        .into_iter()
        .find(|at| bytes.get(*at..).is_some_and(|r| r.starts_with(NEW_MAGIC)));
    if let Some(new_at) = new_at {
        return Ok(LdCache {
            format: Some(CacheFormat::OldNew),
            entries: parse_new(bytes, new_at)?,
        });
    }
    let strings = &bytes[entries_end..];
    let mut entries = Vec::with_capacity(nlibs);
    for i in 0..nlibs {
        let at = 16 + i * 12;
        let flags = u32_at(bytes, at).ok_or(CacheError::Truncated("old entry"))? as i32;
        let key = u32_at(bytes, at + 4).ok_or(CacheError::Truncated("old entry"))? as usize;
        let value = u32_at(bytes, at + 8).ok_or(CacheError::Truncated("old entry"))? as usize;
        let (Some(key), Some(value)) = (str_at(strings, key), str_at(strings, value)) else {
            return Err(CacheError::Corrupt(format!(
                "entry {i} points outside the strings"
            )));
        };
        entries.push(CacheEntry {
            key,
            value,
            flags,
            hwcaps: None,
        });
    }
    Ok(LdCache {
        format: Some(CacheFormat::Old),
        entries,
    })
}

/// Parse the new layout starting at `at` in `file`. As glibc reads it: entry strings and
/// hwcaps names count from the new header; the extension directory and its sections count
/// from the start of the file (they differ in an old+new cache).
fn parse_new(file: &[u8], at: usize) -> Result<Vec<CacheEntry>, CacheError> {
    let b = &file[at..];
    // magic[17] version[3] nlibs len_strings flags(u8) pad[3] extension_offset unused[3]
    let nlibs = u32_at(b, 20).ok_or(CacheError::Truncated("new header"))? as usize;
    let endian = *b.get(28).ok_or(CacheError::Truncated("new header"))?;
    if endian == 3 {
        return Err(CacheError::Corrupt("a big-endian cache".into()));
    }
    let ext_off = u32_at(b, 32).ok_or(CacheError::Truncated("new header"))? as usize;
    if nlibs > MAX_ENTRIES {
        return Err(CacheError::Corrupt(format!("{nlibs} entries")));
    }
    if 48 + nlibs * 24 > b.len() {
        return Err(CacheError::Truncated("new entries"));
    }
    let hwcaps_names = if ext_off != 0 {
        hwcaps_section(file, ext_off, b)
    } else {
        Vec::new()
    };
    let mut entries = Vec::with_capacity(nlibs);
    for i in 0..nlibs {
        let at = 48 + i * 24;
        let flags = u32_at(b, at).ok_or(CacheError::Truncated("new entry"))? as i32;
        let key = u32_at(b, at + 4).ok_or(CacheError::Truncated("new entry"))? as usize;
        let value = u32_at(b, at + 8).ok_or(CacheError::Truncated("new entry"))? as usize;
        let hwcap = u64_at(b, at + 16).ok_or(CacheError::Truncated("new entry"))?;
        let (Some(key), Some(value)) = (str_at(b, key), str_at(b, value)) else {
            return Err(CacheError::Corrupt(format!(
                "entry {i} points outside the file"
            )));
        };
        let hwcaps = if hwcap & HWCAP_EXTENSION != 0 {
            let idx = (hwcap & 0xffff_ffff) as usize;
            Some(
                hwcaps_names
                    .get(idx)
                    .cloned()
                    .ok_or_else(|| CacheError::Corrupt(format!("hwcaps index {idx}")))?,
            )
        } else {
            None
        };
        entries.push(CacheEntry {
            key,
            value,
            flags,
            hwcaps,
        });
    }
    Ok(entries)
}

/// The `glibc-hwcaps` subdirectory names of the extension directory (empty when absent/corrupt);
/// `b` is the file, `strings` the new header's bytes the names' offsets count from.
fn hwcaps_section(b: &[u8], ext_off: usize, strings: &[u8]) -> Vec<String> {
    let mut names = Vec::new();
    if u32_at(b, ext_off) != Some(EXTENSION_MAGIC) {
        return names;
    }
    let count = u32_at(b, ext_off + 4).unwrap_or(0).min(64) as usize;
    for s in 0..count {
        let at = ext_off + 8 + s * 16;
        let (Some(tag), Some(off), Some(size)) =
            (u32_at(b, at), u32_at(b, at + 8), u32_at(b, at + 12))
        else {
            break;
        };
        if tag != TAG_GLIBC_HWCAPS {
            continue;
        }
        for i in 0..(size as usize / 4).min(4096) {
            if let Some(name) =
                u32_at(b, off as usize + i * 4).and_then(|o| str_at(strings, o as usize))
            {
                names.push(name);
            }
        }
    }
    names
}

impl LdCache {
    /// Read and parse `/etc/ld.so.cache` (or another machine path) through `root`.
    pub fn load(root: &Root, machine_path: &Path) -> Result<LdCache, String> {
        let bytes = root.read(machine_path).map_err(|e| e.to_string())?;
        parse(&bytes).map_err(|e| format!("{}: {e}", machine_path.display()))
    }

    /// The entry `ld.so` of an x86-64 process takes for `soname`, given the active
    /// `glibc-hwcaps` subdirectories in priority order (`["x86-64-v4", "x86-64-v3", ...]`).
    pub fn lookup(&self, soname: &str, active_hwcaps: &[&str]) -> Option<&CacheEntry> {
        let mut best: Option<(usize, &CacheEntry)> = None;
        for e in &self.entries {
            if e.key != soname || e.flags != FLAGS_X86_64 {
                continue;
            }
            // Rank: position of its hwcaps subdir (0 best); plain entries rank last.
            let rank = match &e.hwcaps {
                Some(h) => match active_hwcaps.iter().position(|a| a == h) {
                    Some(p) => p,
                    None => continue, // a subdir this CPU cannot use
                },
                None => usize::MAX,
            };
            if best.is_none_or(|(r, _)| rank < r) {
                best = Some((rank, e));
            }
        }
        best.map(|(_, e)| e)
    }

    /// The set of keys (sonames) listed for x86-64.
    pub fn keys(&self) -> BTreeSet<&str> {
        self.entries
            .iter()
            .filter(|e| e.flags == FLAGS_X86_64)
            .map(|e| e.key.as_str())
            .collect()
    }
}

/// The directories `ldconfig` scans per `conf` (a machine path, normally `/etc/ld.so.conf`):
/// its lines in order, `include` globs followed (recursively, once per file), comments and
/// `hwcap` lines skipped. Problems (an unreadable include) are returned beside the list.
pub fn conf_dirs(root: &Root, conf: &Path) -> (Vec<PathBuf>, Vec<String>) {
    let mut dirs = Vec::new();
    let mut errors = Vec::new();
    let mut seen = BTreeSet::new();
    read_conf(root, conf, &mut dirs, &mut errors, &mut seen, 0);
    (dirs, errors)
}

fn read_conf(
    root: &Root,
    conf: &Path,
    dirs: &mut Vec<PathBuf>,
    errors: &mut Vec<String>,
    seen: &mut BTreeSet<PathBuf>,
    depth: usize,
) {
    if depth > 8 || !seen.insert(conf.to_path_buf()) {
        return;
    }
    let text = match root.read_to_string_lossy(conf) {
        Ok(t) => t,
        Err(e) if e.is_not_found() && depth == 0 => return,
        Err(e) => {
            errors.push(e.to_string());
            return;
        }
    };
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if let Some(pattern) = line
            .strip_prefix("include")
            .filter(|r| r.starts_with([' ', '\t']))
        {
            for pat in pattern.split_whitespace() {
                let pat = if Path::new(pat).is_absolute() {
                    PathBuf::from(pat)
                } else {
                    conf.parent().unwrap_or(Path::new("/")).join(pat)
                };
                for file in glob(root, &pat) {
                    read_conf(root, &file, dirs, errors, seen, depth + 1);
                }
            }
            continue;
        }
        if line.starts_with("hwcap") && line[5..].starts_with([' ', '\t']) {
            continue;
        }
        // `dir=TYPE` (libc5-era syntax) and whitespace/comma-separated lists are accepted.
        for d in line.split([' ', '\t', ',', ':']).filter(|s| !s.is_empty()) {
            let d = d.split('=').next().unwrap_or(d);
            let p = PathBuf::from(d.trim_end_matches('/'));
            if p.is_absolute() && !dirs.contains(&p) {
                dirs.push(p);
            }
        }
    }
}

/// Expand a glob whose last component may hold `*` and `?` (what `include` lines use).
fn glob(root: &Root, pattern: &Path) -> Vec<PathBuf> {
    let (Some(dir), Some(name)) = (pattern.parent(), pattern.file_name()) else {
        return Vec::new();
    };
    let name = name.to_string_lossy();
    if !name.contains(['*', '?', '[']) {
        return vec![pattern.to_path_buf()];
    }
    root.read_dir(dir)
        .unwrap_or_default()
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| wildcard(&name, &n.to_string_lossy()))
        })
        .collect()
}

/// `*` / `?` matching (character classes are treated literally; ld.so.conf never uses them).
pub fn wildcard(pat: &str, s: &str) -> bool {
    let p: Vec<char> = pat.chars().collect();
    let t: Vec<char> = s.chars().collect();
    let (mut pi, mut ti, mut star, mut mark) = (0usize, 0usize, None::<usize>, 0usize);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

/// Shared libraries in `dirs` that the cache does not list: files named `lib*.so*` whose
/// DT_SONAME (read only for names that are not already cache keys) is absent from the cache.
/// Returns machine paths of the offending files, by directory order.
pub fn stale_files(root: &Root, cache: &LdCache, dirs: &[PathBuf]) -> Vec<PathBuf> {
    let keys = cache.keys();
    // One directory once, by its identity: on a merged-/usr system `/lib/x86_64-linux-gnu` and
    // `/usr/lib/x86_64-linux-gnu` are the same directory, and ldconfig scans it once.
    let mut seen: BTreeSet<(u64, u64)> = BTreeSet::new();
    let mut out = Vec::new();
    for dir in dirs {
        let Ok(meta) = root.metadata(dir) else {
            continue;
        };
        if !seen.insert((meta.dev(), meta.ino())) {
            continue;
        }
        let Ok(entries) = root.read_dir(dir) else {
            continue;
        };
        for path in entries {
            let Some(name) = path.file_name().map(|n| n.to_string_lossy().into_owned()) else {
                continue;
            };
            if !name.starts_with("lib") || !name.contains(".so") || keys.contains(name.as_str()) {
                continue;
            }
            if !root.is_file(&path) {
                continue;
            }
            let Ok(info) = elf::read(root, &path) else {
                continue; // linker scripts (libc.so) and non-ELF files are never cached
            };
            if info.e_type != 3 {
                continue;
            }
            // ldconfig names an entry after the soname (or the file name when there is none).
            let soname = info.soname.unwrap_or(name);
            if !keys.contains(soname.as_str()) {
                out.push(path);
            }
        }
    }
    out
}

/// Cache entries (x86-64) whose file no longer exists in `root`: `ld.so` tries them, fails, and
/// goes on to the default directories.
pub fn dangling_entries<'c>(root: &Root, cache: &'c LdCache) -> Vec<&'c CacheEntry> {
    cache
        .entries
        .iter()
        .filter(|e| e.flags == FLAGS_X86_64 && !root.exists(Path::new(&e.value)))
        .collect()
}

/// The trusted directories `ldconfig` always scans on a Debian-style multiarch x86-64 system
/// (and `/lib64`, `/usr/lib64` elsewhere), as far as they exist in `root`.
pub fn trusted_dirs(root: &Root) -> Vec<PathBuf> {
    crate::probe::libs::layout::default_dirs(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hand-built old-format cache (ldconfig ≥ 2.32 can no longer write one alone).
    fn old_cache(entries: &[(i32, &str, &str)]) -> Vec<u8> {
        let mut strings = Vec::new();
        let mut recs = Vec::new();
        for (flags, k, v) in entries {
            let ko = strings.len() as u32;
            strings.extend_from_slice(k.as_bytes());
            strings.push(0);
            let vo = strings.len() as u32;
            strings.extend_from_slice(v.as_bytes());
            strings.push(0);
            recs.push((*flags, ko, vo));
        }
        let mut b = OLD_MAGIC.to_vec();
        b.push(0);
        b.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        for (f, k, v) in recs {
            b.extend_from_slice(&f.to_le_bytes());
            b.extend_from_slice(&k.to_le_bytes());
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&strings);
        b
    }

    #[test]
    fn old_format_entries_and_lookup() {
        let b = old_cache(&[
            (
                0x0303,
                "libcudart.so.11.0",
                "/usr/local/cuda/lib64/libcudart.so.11.0",
            ),
            (0x0003, "libcudart.so.11.0", "/usr/lib32/libcudart.so.11.0"),
        ]);
        let c = parse(&b).unwrap();
        assert_eq!(c.format, Some(CacheFormat::Old));
        assert_eq!(c.entries.len(), 2);
        assert_eq!(c.entries[1].flags_label(), "libc6");
        let hit = c.lookup("libcudart.so.11.0", &[]).unwrap();
        assert_eq!(hit.value, "/usr/local/cuda/lib64/libcudart.so.11.0");
        assert_eq!(hit.flags_label(), "libc6,x86-64");
        assert!(c.lookup("libcudart.so.12", &[]).is_none());
    }

    #[test]
    fn hostile_caches_are_errors() {
        assert_eq!(parse(b"hello"), Err(CacheError::BadMagic));
        let mut b = old_cache(&[(0x0303, "a", "b")]);
        b[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(parse(&b).is_err());
        let b = old_cache(&[(0x0303, "libx.so.1", "/x")]);
        for cut in 0..b.len() {
            let _ = parse(&b[..cut]);
        }
        let mut n = NEW_MAGIC.to_vec();
        n.resize(48, 0);
        n[20..24].copy_from_slice(&3u32.to_le_bytes());
        assert_eq!(parse(&n), Err(CacheError::Truncated("new entries")));
    }

    #[test]
    fn wildcards() {
        assert!(wildcard("*.conf", "libc.conf"));
        assert!(!wildcard("*.conf", "libc.conf.bak"));
        assert!(wildcard("x?6*", "x86_64-linux-gnu.conf"));
    }
}
