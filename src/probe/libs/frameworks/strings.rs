//! Literal strings inside a binary (what `strings | grep` would show), read with bounded
//! positional reads: the names a library hands to `dlopen` (`libnvrtc-builtins.so.13.2` in
//! libnvrtc, `libcudnn_graph.so` in libcudnn) and build facts compiled in as text (torch's
//! `sm_75 sm_80 ...` architecture list). Never an `mmap` (a file truncated under it would kill
//! the process), never more than [`MAX_SCAN`] bytes of one file.

use crate::root::Root;
use std::io::Read;
use std::path::Path;

/// Most bytes of one file scanned (libnvrtc is ~115 MB, libtorch_python ~30 MB).
pub const MAX_SCAN: u64 = 512 * 1024 * 1024;

const CHUNK: usize = 8 * 1024 * 1024;

/// Every distinct string that starts with `prefix` and continues with bytes `keep` accepts (at
/// most `max_len` bytes in all), in the order found. A missing or unreadable file gives none.
///
/// In an ELF file with section headers only its read-only data (`.rodata*`, `.lrodata*`) is
/// scanned, where such literals live (libtorch_python's 1 MB of 34, libnvrtc's 13 MB of 115);
/// any other file is scanned whole.
pub fn find_strings(
    root: &Root,
    path: &Path,
    prefix: &[u8],
    keep: impl Fn(u8) -> bool,
    max_len: usize,
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let Ok(file) = root.open(path) else {
        return out;
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    match rodata_ranges(&file, len) {
        Some(ranges) => {
            let mut budget = MAX_SCAN;
            for (off, size) in ranges {
                let size = size.min(budget);
                budget -= size;
                let reader = RangeReader {
                    file: &file,
                    at: off,
                    end: off + size,
                };
                scan(reader, prefix, &keep, max_len, &mut out);
            }
        }
        None => scan(file.take(MAX_SCAN), prefix, &keep, max_len, &mut out),
    }
    out
}

/// A positional reader over `[at, end)` of a file.
struct RangeReader<'a> {
    file: &'a std::fs::File,
    at: u64,
    end: u64,
}

impl Read for RangeReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use std::os::unix::fs::FileExt;
        let left = self.end.saturating_sub(self.at);
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        if want == 0 {
            return Ok(0);
        }
        let n = self.file.read_at(&mut buf[..want], self.at)?;
        self.at += n as u64;
        Ok(n)
    }
}

/// The (offset, size) of the read-only data sections of a 64-bit little-endian ELF file, when
/// its section headers name any; `None` otherwise (scan it whole).
fn rodata_ranges(file: &std::fs::File, len: u64) -> Option<Vec<(u64, u64)>> {
    let out: Vec<(u64, u64)> = crate::probe::libs::elf::sections(file, len)?
        .into_iter()
        .filter(|s| {
            s.kind == crate::probe::libs::elf::SHT_PROGBITS
                && (s.name.starts_with(b".rodata") || s.name.starts_with(b".lrodata"))
                && s.offset.checked_add(s.size).is_some_and(|e| e <= len)
        })
        .map(|s| (s.offset, s.size))
        .collect();
    (!out.is_empty()).then_some(out)
}

/// Add to `out` every distinct string of `reader` that starts with `prefix` (see
/// [`find_strings`]).
fn scan(
    mut reader: impl Read,
    prefix: &[u8],
    keep: &impl Fn(u8) -> bool,
    max_len: usize,
    out: &mut Vec<String>,
) {
    let finder = memchr::memmem::Finder::new(prefix);
    let overlap = max_len.max(prefix.len());
    let mut buf: Vec<u8> = Vec::with_capacity(CHUNK + overlap);
    let mut chunk = vec![0u8; CHUNK];
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
        // Scan all but the tail that a string could still run into.
        let limit = buf.len().saturating_sub(overlap);
        let mut from = 0;
        while let Some(i) = finder.find(&buf[from..]) {
            let start = from + i;
            if start >= limit {
                break;
            }
            let end = buf[start + prefix.len()..]
                .iter()
                .take(max_len - prefix.len())
                .position(|b| !keep(*b))
                .map(|p| start + prefix.len() + p)
                .unwrap_or((start + max_len).min(buf.len()));
            let s = String::from_utf8_lossy(&buf[start..end]).into_owned();
            if !out.contains(&s) {
                out.push(s);
            }
            from = start + 1;
        }
        let keep_from = limit.max(from.min(buf.len()));
        buf.drain(..keep_from.min(buf.len()));
    }
    // The tail.
    let mut from = 0;
    while let Some(i) = finder.find(&buf[from..]) {
        let start = from + i;
        let end = buf[start + prefix.len()..]
            .iter()
            .position(|b| !keep(*b))
            .map(|p| start + prefix.len() + p)
            .unwrap_or(buf.len());
        let s = String::from_utf8_lossy(&buf[start..end.min(start + max_len)]).into_owned();
        if !out.contains(&s) {
            out.push(s);
        }
        from = start + 1;
    }
}

/// Bytes of a soname (`libnvrtc-builtins.so.13.2`).
pub fn soname_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_elf_file_is_scanned_in_its_read_only_data() {
        let t = tempfile::tempdir().unwrap();
        let c = t.path().join("x.c");
        std::fs::write(
            &c,
            "const char *builtins(void) { return \"libnvrtc-builtins.so.13.2\"; }\n",
        )
        .unwrap();
        let so = t.path().join("libx.so");
        let built = std::process::Command::new("cc")
            .args(["-shared", "-fPIC", "-o"])
            .arg(&so)
            .arg(&c)
            .status()
            .is_ok_and(|s| s.success());
        if !built {
            eprintln!("skipped: no cc");
            return;
        }
        let file = std::fs::File::open(&so).unwrap();
        let len = file.metadata().unwrap().len();
        let ranges = rodata_ranges(&file, len).expect("cc's output has a .rodata");
        assert!(ranges.iter().map(|r| r.1).sum::<u64>() < len);
        // The literal is found there; the same bytes appended after the last section are not
        // read (they are in no read-only data section).
        let mut bytes = std::fs::read(&so).unwrap();
        bytes.extend_from_slice(b"\0libnvrtc-builtins.so.99.9\0");
        std::fs::write(&so, &bytes).unwrap();
        let root = Root::new(t.path());
        let v = find_strings(
            &root,
            Path::new("/libx.so"),
            b"libnvrtc-builtins.so.",
            soname_byte,
            64,
        );
        assert_eq!(v, vec!["libnvrtc-builtins.so.13.2".to_string()]);
    }

    #[test]
    fn strings_across_chunk_borders_and_at_the_end() {
        let t = tempfile::tempdir().unwrap();
        let mut data = vec![0u8; CHUNK - 10];
        data.extend_from_slice(b"libnvrtc-builtins.so.13.2\0");
        data.extend_from_slice(&[7u8; 100]);
        data.extend_from_slice(b"xx libnvrtc-builtins.so.12.8");
        std::fs::write(t.path().join("f"), &data).unwrap();
        let root = Root::new(t.path());
        let v = find_strings(
            &root,
            Path::new("/f"),
            b"libnvrtc-builtins.so.",
            soname_byte,
            64,
        );
        assert_eq!(
            v,
            vec![
                "libnvrtc-builtins.so.13.2".to_string(),
                "libnvrtc-builtins.so.12.8".to_string()
            ]
        );
        assert!(find_strings(&root, Path::new("/missing"), b"x", soname_byte, 8).is_empty());
    }
}
