//! Streaming a log line by line with bounded memory: chunks of 64 KiB, lines cut at
//! [`MAX_LINE`] bytes, `\r`-overwritten progress bars split into their segments, ANSI escape
//! sequences removed, and the encoding sniffed from the first chunk (binary and UTF-16 input is
//! refused with a message; bytes that are not UTF-8 are read as Latin-1).

use regex::bytes::Regex;
use std::borrow::Cow;
use std::io::{self, Read};

/// The longest line kept; the rest of a longer line is dropped (a minified blob, a progress bar
/// without newlines).
pub const MAX_LINE: usize = 16 * 1024;
const CHUNK: usize = 64 * 1024;

/// Why a log cannot be read as text.
#[derive(Debug)]
pub enum ReadError {
    /// An I/O error.
    Io(io::Error),
    /// Not text: the message says what it looks like.
    NotText(String),
}

/// What reading saw.
#[derive(Debug, Default, Clone)]
pub struct Stats {
    /// Physical lines read (`\n`-separated).
    pub lines: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Lines longer than [`MAX_LINE`] (cut).
    pub long_lines: u64,
    /// Lines that were not valid UTF-8 (read as Latin-1).
    pub non_utf8_lines: u64,
    /// The last [`TAIL`] bytes of the input, as read.
    pub tail: Vec<u8>,
}

/// How much of the end of the input [`Stats::tail`] keeps.
pub const TAIL: usize = 4096;

/// Call `f(line_number, text)` for every line of `r` (1-based numbers; a `\r`-split line gives
/// each non-empty segment under the same number). `text` has ANSI sequences and the line ending
/// removed and is valid UTF-8 only after [`decode`]; matching works on bytes.
pub fn for_each_line<R: Read>(r: R, f: impl FnMut(u64, &[u8])) -> Result<Stats, ReadError> {
    for_each_candidate(r, None, f)
}

/// Like [`for_each_line`], but with a `screen` (a multi-line regex) only the lines it matches
/// are passed to `f`: a block of complete lines that is UTF-8 and free of ANSI escapes is
/// searched as a whole, and only the lines holding a match are cut out. Other blocks go line by
/// line. Line numbers and [`Stats`] are the same either way.
pub fn for_each_candidate<R: Read>(
    mut r: R,
    screen: Option<&Regex>,
    mut f: impl FnMut(u64, &[u8]),
) -> Result<Stats, ReadError> {
    let mut st = Stats::default();
    let mut chunk = vec![0u8; CHUNK];
    let mut carry: Vec<u8> = Vec::new();
    let mut cut = false;
    let mut first = true;
    let mut scratch = Vec::new();
    let mut stripped = Vec::new();
    loop {
        let n = match r.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(ReadError::Io(e)),
        };
        let mut data = &chunk[..n];
        st.bytes += n as u64;
        if first {
            // A log truncated in place while its writer kept its offset (logrotate's
            // `copytruncate`) starts with a run of NULs: skipped, not taken for UTF-16.
            data = &data[data.iter().take_while(|&&b| b == 0).count()..];
            if data.is_empty() {
                continue;
            }
            first = false;
            sniff(data)?;
            data = data.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(data);
        }
        keep_tail(&mut st.tail, data);
        // The line that began in an earlier chunk.
        let Some(start) = finish_carried(data, &mut carry, &mut cut, &mut st, &mut scratch, &mut f)
        else {
            continue;
        };
        let end = memchr::memrchr(b'\n', &data[start..]).map_or(start, |i| start + i + 1);
        let block = &data[start..end];
        let utf8 = std::str::from_utf8(block).is_ok();
        // Colour codes removed from the whole block first (newlines stay where they are).
        let block: &[u8] = if screen.is_some() && utf8 && memchr::memchr(0x1b, block).is_some() {
            strip_ansi(block, &mut stripped);
            &stripped
        } else {
            block
        };
        match screen {
            Some(re) if utf8 => emit_matching_lines(re, block, &mut st, &mut scratch, &mut f),
            _ => emit_lines(block, &mut st, &mut scratch, &mut f),
        }
        push_capped(&mut carry, &data[end..], &mut cut);
    }
    if !carry.is_empty() {
        st.lines += 1;
        if cut {
            st.long_lines += 1;
        }
        emit(st.lines, &carry, &mut st, &mut scratch, &mut f);
    }
    Ok(st)
}

/// The line carried over from an earlier chunk (if any), completed by `data` up to its first
/// newline and emitted. Where the rest of `data` starts; None when `data` holds no newline (all
/// of it is carried on).
fn finish_carried(
    data: &[u8],
    carry: &mut Vec<u8>,
    cut: &mut bool,
    st: &mut Stats,
    scratch: &mut Vec<u8>,
    f: &mut impl FnMut(u64, &[u8]),
) -> Option<usize> {
    if carry.is_empty() && !*cut {
        return Some(0);
    }
    let Some(nl) = memchr::memchr(b'\n', data) else {
        push_capped(carry, data, cut);
        return None;
    };
    push_capped(carry, &data[..nl], cut);
    st.lines += 1;
    if *cut {
        st.long_lines += 1;
    }
    emit(st.lines, carry, st, scratch, f);
    carry.clear();
    *cut = false;
    Some(nl + 1)
}

/// Emits the lines of `block` (complete lines, UTF-8) that hold a match of `re`, counting the
/// others.
fn emit_matching_lines(
    re: &Regex,
    block: &[u8],
    st: &mut Stats,
    scratch: &mut Vec<u8>,
    f: &mut impl FnMut(u64, &[u8]),
) {
    let mut pos = 0;
    while pos < block.len() {
        let Some(m) = re.find_at(block, pos) else {
            st.lines += count_lines(&block[pos..]);
            break;
        };
        let at = m.start().min(block.len() - 1);
        let ls = memchr::memrchr(b'\n', &block[pos..at]).map_or(pos, |i| pos + i + 1);
        st.lines += count_lines(&block[pos..ls]);
        let le = memchr::memchr(b'\n', &block[at..]).map_or(block.len(), |i| at + i);
        st.lines += 1;
        emit(st.lines, &block[ls..le], st, scratch, f);
        pos = le + 1;
    }
}

/// Emits every line of `block` (complete lines).
fn emit_lines(block: &[u8], st: &mut Stats, scratch: &mut Vec<u8>, f: &mut impl FnMut(u64, &[u8])) {
    let mut s = 0;
    for nl in memchr::memchr_iter(b'\n', block) {
        st.lines += 1;
        emit(st.lines, &block[s..nl], st, scratch, f);
        s = nl + 1;
    }
}

fn count_lines(s: &[u8]) -> u64 {
    memchr::memchr_iter(b'\n', s).count() as u64
}

fn keep_tail(tail: &mut Vec<u8>, data: &[u8]) {
    if data.len() >= TAIL {
        tail.clear();
        tail.extend_from_slice(&data[data.len() - TAIL..]);
    } else {
        tail.extend_from_slice(data);
        if tail.len() > TAIL {
            tail.drain(..tail.len() - TAIL);
        }
    }
}

fn push_capped(carry: &mut Vec<u8>, piece: &[u8], cut: &mut bool) {
    let room = MAX_LINE.saturating_sub(carry.len());
    if piece.len() > room {
        *cut = true;
    }
    carry.extend_from_slice(&piece[..piece.len().min(room)]);
}

fn emit(
    no: u64,
    line: &[u8],
    st: &mut Stats,
    scratch: &mut Vec<u8>,
    f: &mut impl FnMut(u64, &[u8]),
) {
    let mut line = if line.len() > MAX_LINE {
        st.long_lines += 1;
        &line[..MAX_LINE]
    } else {
        line
    };
    if let Some(rest) = line.strip_suffix(b"\r") {
        line = rest;
    }
    if !line.is_ascii() && std::str::from_utf8(line).is_err() {
        st.non_utf8_lines += 1;
    }
    let line: &[u8] = if memchr::memchr(0x1b, line).is_some() {
        strip_ansi(line, scratch);
        scratch
    } else {
        line
    };
    if memchr::memchr(b'\r', line).is_some() {
        for seg in line.split(|&b| b == b'\r').filter(|s| !s.is_empty()) {
            f(no, seg);
        }
    } else {
        f(no, line);
    }
}

/// Remove ANSI escape sequences (CSI `ESC [ ... final`, OSC `ESC ] ... BEL|ESC \`, and
/// two-byte escapes) from `line` into `out`.
pub fn strip_ansi(line: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let mut i = 0;
    while i < line.len() {
        let Some(esc) = memchr::memchr(0x1b, &line[i..]) else {
            out.extend_from_slice(&line[i..]);
            break;
        };
        out.extend_from_slice(&line[i..i + esc]);
        i += esc;
        match line.get(i + 1) {
            Some(b'[') => {
                i += 2;
                while i < line.len() && !(0x40..=0x7e).contains(&line[i]) && line[i] != b'\n' {
                    i += 1;
                }
                if line.get(i) != Some(&b'\n') {
                    i += 1;
                }
            }
            Some(b']') => {
                i += 2;
                while i < line.len() && line[i] != b'\n' {
                    if line[i] == 0x07 {
                        i += 1;
                        break;
                    }
                    if line[i] == 0x1b && line.get(i + 1) == Some(&b'\\') {
                        i += 2;
                        break;
                    }
                    i += 1;
                }
            }
            Some(b'\n') | None => i += 1,
            Some(_) => i += 2,
        }
    }
}

/// Refuse what is not a text log: UTF-16/32 (by BOM or by NUL bytes in every other position)
/// and binary files (NUL bytes in the first chunk).
fn sniff(head: &[u8]) -> Result<(), ReadError> {
    if head.starts_with(b"\xFF\xFE") || head.starts_with(b"\xFE\xFF") {
        return Err(ReadError::NotText(
            "the log is UTF-16 (it starts with a UTF-16 byte-order mark); convert it first: \
             iconv -f UTF-16 -t UTF-8 LOG > log.txt"
                .into(),
        ));
    }
    let sample = &head[..head.len().min(8192)];
    let nuls = sample.iter().filter(|&&b| b == 0).count();
    if nuls == 0 {
        return Ok(());
    }
    let odd_nuls = sample
        .iter()
        .skip(1)
        .step_by(2)
        .filter(|&&b| b == 0)
        .count();
    let even_nuls = sample.iter().step_by(2).filter(|&&b| b == 0).count();
    let half = sample.len() / 2;
    if half > 0 && (odd_nuls * 10 >= half * 8 || even_nuls * 10 >= half * 8) {
        return Err(ReadError::NotText(
            "the log looks like UTF-16 text (every other byte is NUL); convert it first: \
             iconv -f UTF-16 -t UTF-8 LOG > log.txt"
                .into(),
        ));
    }
    Err(ReadError::NotText(format!(
        "this is not a text log: its first {} bytes hold {nuls} NUL bytes (a binary file?)",
        sample.len()
    )))
}

/// The text of a line: UTF-8 as is, anything else read as Latin-1 (every byte a character).
pub fn decode(line: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(line) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => Cow::Owned(line.iter().map(|&b| b as char).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8]) -> (Vec<(u64, String)>, Stats) {
        let mut out = Vec::new();
        let st = for_each_line(input, |n, l| out.push((n, decode(l).into_owned()))).unwrap();
        (out, st)
    }

    #[test]
    fn ansi_cr_crlf_bom_and_latin1_are_tolerated() {
        let (l, st) = lines(
            b"\xEF\xBB\xBFa\r\n\x1b[31mred\x1b[0m\nep 1/3\rep 2/3\rdone\n\x1b]0;title\x07x\ncaf\xe9",
        );
        let texts: Vec<&str> = l.iter().map(|(_, s)| s.as_str()).collect();
        assert_eq!(
            texts,
            vec!["a", "red", "ep 1/3", "ep 2/3", "done", "x", "caf\u{e9}"]
        );
        assert_eq!(l[4].0, 3, "segments keep their line's number");
        assert_eq!(st.lines, 5);
        assert_eq!(st.non_utf8_lines, 1);
    }

    #[test]
    fn a_log_that_starts_with_nuls_after_copytruncate_is_read() {
        let mut input = vec![0u8; 100_000];
        input.extend_from_slice(b"Traceback (most recent call last):\nboom\n");
        let (l, st) = lines(&input);
        let texts: Vec<&str> = l.iter().map(|(_, s)| s.as_str()).collect();
        assert_eq!(texts, ["Traceback (most recent call last):", "boom"]);
        assert_eq!(st.bytes, input.len() as u64);
    }

    #[test]
    fn long_lines_are_cut_and_memory_stays_bounded() {
        let mut input = vec![b'x'; MAX_LINE * 3 + 10];
        input.extend_from_slice(b"\nshort\n");
        let (l, st) = lines(&input);
        assert_eq!(l[0].1.len(), MAX_LINE);
        assert_eq!(l[1].1, "short");
        assert_eq!(st.long_lines, 1);
    }

    #[test]
    fn binary_and_utf16_are_refused_with_a_reason() {
        let bin: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
        match for_each_line(&bin[..], |_, _| {}) {
            Err(ReadError::NotText(m)) => assert!(m.contains("NUL"), "{m}"),
            other => panic!("{other:?}"),
        }
        let utf16: Vec<u8> = "Traceback (most recent call last):\n"
            .encode_utf16()
            .flat_map(|u| u.to_le_bytes())
            .collect();
        match for_each_line(&utf16[..], |_, _| {}) {
            Err(ReadError::NotText(m)) => assert!(m.contains("UTF-16"), "{m}"),
            other => panic!("{other:?}"),
        }
        let (l, st) = lines(b"");
        assert!(l.is_empty() && st.lines == 0);
    }

    #[test]
    fn screening_blocks_gives_the_same_lines_numbers_and_stats() {
        let re = regex::bytes::RegexBuilder::new(r"(?m)^Error: \w+|boom")
            .crlf(true)
            .build()
            .unwrap();
        let mut input = Vec::new();
        for i in 0..20_000 {
            match i % 997 {
                0 => input.extend_from_slice(format!("Error: e{i}\r\n").as_bytes()),
                5 => input.extend_from_slice(format!("x\ry boom {i}\n").as_bytes()),
                7 => input.extend_from_slice(b"\x1b[1mboom\x1b[0m\n"),
                _ => input.extend_from_slice(format!("step {i} loss 0.{i}\n").as_bytes()),
            }
        }
        input.extend_from_slice(b"tail boom");
        let mut all = Vec::new();
        let st_all = for_each_line(&input[..], |n, l| {
            if re.is_match(l) {
                all.push((n, l.to_vec()))
            }
        })
        .unwrap();
        let mut screened = Vec::new();
        let st = for_each_candidate(&input[..], Some(&re), |n, l| {
            if re.is_match(l) {
                screened.push((n, l.to_vec()))
            }
        })
        .unwrap();
        assert_eq!(all, screened);
        assert!(all.len() > 40, "{}", all.len());
        assert_eq!(st.lines, st_all.lines);
        assert_eq!(st.lines, 20_001);
        assert!(st.tail.ends_with(b"tail boom") && st.tail.len() == TAIL);
    }
}
