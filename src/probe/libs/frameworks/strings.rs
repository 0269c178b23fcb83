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
    let mut reader = file.take(MAX_SCAN);
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
    out
}

/// Bytes of a soname (`libnvrtc-builtins.so.13.2`).
pub fn soname_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-'
}

#[cfg(test)]
mod tests {
    use super::*;

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
