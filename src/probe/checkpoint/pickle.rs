//! The pickle opcode walker shared by every pickle-based format (torch checkpoints, plain
//! pickles, joblib files): it never unpickles. It reads the opcode stream, keeps the top of a
//! value stack only for strings and small integers, and records the protocol, the
//! `module.name` globals (GLOBAL / INST, and STACK_GLOBAL with its two strings tracked through
//! the memo), torch storage locations and the library versions a pickle records
//! (`_sklearn_version`). Joblib files interleave raw array bytes with the pickle; the walker sizes
//! and skips them from each `NumpyArrayWrapper`'s state. Bounded: every length is checked
//! against the buffer, the memo and stack are capped, and a deadline stops a long walk.

use std::collections::{BTreeSet, HashMap};
use std::time::Instant;

/// Most memoized strings remembered (for STACK_GLOBAL through BINGET); keeps memory flat.
const MAX_MEMO: usize = 1 << 20;

/// Most opcodes between two looks at the deadline.
const DEADLINE_EVERY: u32 = 1 << 16;

/// What the opcode scan found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Scan {
    /// The pickle protocol (the PROTO opcode), when stated.
    pub protocol: Option<u8>,
    /// Every `module.name` a GLOBAL, INST or STACK_GLOBAL names.
    pub globals: BTreeSet<String>,
    /// Storage locations named by persistent ids (torch: `cpu`, `cuda:0`).
    pub locations: BTreeSet<String>,
    /// Whether STACK_GLOBAL (protocol 4+) was used.
    pub stack_global: bool,
    /// Bytes consumed, up to and including STOP.
    pub end: usize,
    /// Integers seen by LONG1 (the legacy magic number is one).
    pub first_long: Option<u128>,
    /// String literals pushed (in the legacy format's last pickle, the list of storage keys,
    /// one per storage).
    pub strings: u64,
    /// The value of the first `_sklearn_version` key (what scikit-learn's `__getstate__` adds).
    pub sklearn_version: Option<String>,
    /// Raw joblib arrays sized and skipped (each after a `NumpyArrayWrapper`).
    pub joblib_arrays: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Item {
    Str(String),
    Int(u64),
    /// The object a GLOBAL / STACK_GLOBAL pushed (`module.name`), kept for the memo: pickles
    /// fetch a class they use again (`numpy.dtype`) with BINGET.
    Global(String),
    /// A `numpy.dtype` built by REDUCE, with its type code (`f8`): memoized and fetched again
    /// for every array of that type.
    Dtype(String),
    Other,
}

/// A joblib `NumpyArrayWrapper` whose state is being read: its dict holds `shape`, `order`,
/// `dtype` (a pickled `numpy.dtype` whose first string is the type code: `f8`, `U10`, `O8`),
/// `allow_mmap` and, since joblib 1.2, `numpy_array_alignment_bytes`. The BUILD after
/// `allow_mmap` ends it; the array's bytes follow in the file.
#[derive(Debug, Default)]
struct Wrapper {
    /// The last key string was `shape`: integers are its dimensions.
    in_shape: bool,
    shape: Vec<u64>,
    /// The type code of its `dtype` (named, or fetched from the memo).
    dtype: Option<String>,
    /// `allow_mmap` was seen: the next BUILD is the wrapper's.
    ready: bool,
    /// `numpy_array_alignment_bytes` was seen: the next integer says padding is written.
    want_align: bool,
    align: bool,
}

/// The bytes one element of a numpy type code takes (`f8` 8, `U10` 40, `S3` 3, `b1` 1); `None`
/// for object arrays (`O8`: a nested pickle) and codes it does not know.
fn itemsize(code: &str) -> Option<u64> {
    let kind = code.chars().next()?;
    let n: u64 = code[kind.len_utf8()..].parse().ok()?;
    match kind {
        'U' => n.checked_mul(4),
        'b' | 'i' | 'u' | 'f' | 'c' | 'm' | 'M' | 'S' | 'V' => Some(n),
        _ => None,
    }
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
    match scan_with(buf, None) {
        (s, None) => Ok(s),
        (_, Some(e)) => Err(e),
    }
}

/// Scan one pickle up to its STOP opcode, or until it ends early (truncated, not a pickle, or
/// past `deadline`): what was found up to there, and why it stopped early.
pub fn scan_with(buf: &[u8], deadline: Option<Instant>) -> (Scan, Option<String>) {
    let mut s = Scanner::new(buf, deadline, 0);
    let stop = s.run().err();
    (s.out, stop)
}

/// The opcode scan under way: the pickle, the read position, the top of the stack, the
/// memoized strings and what was found so far.
struct Scanner<'a> {
    buf: &'a [u8],
    pos: usize,
    stack: Vec<Item>,
    memo: HashMap<u64, Item>,
    memo_next: u64,
    out: Scan,
    wrapper: Option<Wrapper>,
    /// A `numpy.dtype` global was pushed: the next string is its type code.
    dtype_global: bool,
    /// That code, until the REDUCE that builds the dtype.
    dtype_code: Option<String>,
    deadline: Option<Instant>,
    /// Nesting of object-array pickles inside a joblib file.
    depth: u8,
}

impl<'a> Scanner<'a> {
    /// A scan of `buf` from its start, `depth` pickles deep (0: the file's own).
    fn new(buf: &'a [u8], deadline: Option<Instant>, depth: u8) -> Scanner<'a> {
        Scanner {
            buf,
            pos: 0,
            stack: Vec::new(),
            memo: HashMap::new(),
            memo_next: 0,
            out: Scan::default(),
            wrapper: None,
            dtype_global: false,
            dtype_code: None,
            deadline,
            depth,
        }
    }

    /// Walk opcodes up to STOP.
    fn run(&mut self) -> Result<(), String> {
        let mut count = 0u32;
        loop {
            count = count.wrapping_add(1);
            if count % DEADLINE_EVERY == 0 && self.deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(format!("deadline reached at byte {}", self.pos));
            }
            if self.stack.len() > 64 {
                // Only the top few items matter; keep memory flat on deep pickles.
                self.stack.drain(..32);
            }
            let Some(&op) = self.buf.get(self.pos) else {
                return Err(format!(
                    "pickle truncated at byte {} (no STOP opcode)",
                    self.pos
                ));
            };
            let at = self.pos;
            self.pos += 1;
            if op == b'.' {
                self.out.end = self.pos;
                return Ok(());
            }
            if !self.step(op)? {
                return Err(format!(
                    "not a pickle: unknown opcode {op:#04x} at byte {at}"
                ));
            }
        }
    }

    /// One opcode (after its byte); false when it is no pickle opcode.
    fn step(&mut self, op: u8) -> Result<bool, String> {
        match op {
            0x80 => self.out.protocol = Some(self.take(1)?[0]),
            0x95 => {
                self.take(8)?;
            }
            // GLOBAL and INST: two newline-terminated lines.
            b'c' | b'i' => self.global()?,
            0x93 => self.stack_global(),
            // Strings.
            b'X' | b'T' => self.sized_string(4)?,
            0x8c | b'U' => self.sized_string(1)?,
            0x8d => self.sized_string(8)?,
            b'V' | b'S' => self.line_string()?,
            // Bytes and other length-prefixed data.
            b'B' | 0x8b => self.sized_data(4)?,
            b'C' => self.sized_data(1)?,
            0x8a => self.long1()?,
            0x8e | 0x96 => self.sized_data(8)?,
            // Memo.
            0x94 => self.memoize(),
            b'q' | b'r' | b'p' => {
                let idx = self.memo_index(op)?;
                self.memo_put(idx);
            }
            b'h' | b'j' | b'g' => {
                let idx = self.memo_index(op)?;
                self.memo_get(idx);
            }
            // Persistent ids: torch's storage tuples ('storage', type, key, location, size).
            b'Q' | b'P' => self.persistent_id(op)?,
            // Integers (kept: a joblib array's shape) and other fixed-size arguments.
            b'J' => self.int(4)?,
            b'K' => self.int(1)?,
            b'M' => self.int(2)?,
            b'I' => self.int_line()?,
            0x84 => self.skip(4)?,
            0x82 => self.skip(1)?,
            0x83 => self.skip(2)?,
            b'G' => self.skip(8)?,
            b'L' | b'F' => self.skip_line()?,
            b'b' => self.build()?,
            b'R' => self.reduce(),
            // No arguments.
            b'N' => {
                if let Some(w) = &mut self.wrapper {
                    w.want_align = false;
                }
                self.stack.push(Item::Other);
            }
            b'(' | b')' | b']' | b'}' | 0x88 | 0x89 | 0x8f | 0x85 | 0x86 | 0x87 | b't' | b'l'
            | b'd' | 0x81 | 0x92 | b'o' | b'a' | b'e' | b's' | b'u' | 0x90 | 0x91 | b'0' | b'1'
            | b'2' | 0x97 | 0x98 => {
                self.stack.push(Item::Other);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// An integer argument `width` bytes wide (BININT1/2/4), kept on the stack.
    fn int(&mut self, width: u64) -> Result<(), String> {
        let v = self.sized(width)?;
        self.push_int(v);
        Ok(())
    }

    /// INT: a decimal line (`I01` is True in protocol 0).
    fn int_line(&mut self) -> Result<(), String> {
        let l = String::from_utf8_lossy(self.line()?).into_owned();
        match l.trim().parse::<u64>() {
            Ok(v) => self.push_int(v),
            Err(_) => self.stack.push(Item::Other),
        }
        Ok(())
    }

    /// Push an integer; inside a joblib wrapper it may be a dimension or the alignment.
    fn push_int(&mut self, v: u64) {
        if let Some(w) = &mut self.wrapper {
            if w.in_shape {
                w.shape.push(v);
            }
            if w.want_align {
                w.align = v > 0;
                w.want_align = false;
            }
        }
        self.stack.push(Item::Int(v));
    }

    /// BUILD: the end of a joblib wrapper's state is followed by its array's raw bytes.
    fn build(&mut self) -> Result<(), String> {
        self.stack.push(Item::Other);
        if !self.wrapper.as_ref().is_some_and(|w| w.ready) {
            return Ok(());
        }
        let Some(w) = self.wrapper.take() else {
            return Ok(());
        };
        self.skip_array(&w)
    }

    /// Skip the array a joblib wrapper announced: an object array is a nested pickle (walked
    /// too: its globals count); any other is an optional padding byte and padding, then
    /// `prod(shape) * itemsize` bytes.
    fn skip_array(&mut self, w: &Wrapper) -> Result<(), String> {
        let code = w.dtype.as_deref().unwrap_or("");
        if code.starts_with('O') {
            if self.depth >= 4 {
                return Err("joblib object arrays nested too deep".into());
            }
            let mut inner = Scanner::new(&self.buf[self.pos..], self.deadline, self.depth + 1);
            let r = inner.run();
            self.pos += inner.pos;
            self.out.globals.append(&mut inner.out.globals);
            self.out.sklearn_version = self
                .out
                .sklearn_version
                .take()
                .or(inner.out.sklearn_version);
            self.out.joblib_arrays += 1 + inner.out.joblib_arrays;
            return r;
        }
        let Some(size) = itemsize(code) else {
            return Err(format!(
                "joblib array of dtype {code:?}: cannot size its bytes"
            ));
        };
        if w.align {
            let pad = self.take(1)?[0];
            self.take(u64::from(pad))?;
        }
        let n = w
            .shape
            .iter()
            .try_fold(size, |acc, d| acc.checked_mul(*d))
            .ok_or("joblib array size overflows")?;
        self.take(n)?;
        self.out.joblib_arrays += 1;
        Ok(())
    }

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
        self.push_string(String::from_utf8_lossy(b).into_owned());
    }

    /// Push a string (a literal or one from the memo): the value of a `_sklearn_version` key is
    /// recorded, and inside a joblib wrapper the keys steer what its integers mean.
    fn push_string(&mut self, s: String) {
        if self.out.sklearn_version.is_none()
            && matches!(self.stack.last(), Some(Item::Str(k)) if k == "_sklearn_version")
        {
            self.out.sklearn_version = Some(s.chars().take(64).collect());
        }
        if self.dtype_global {
            self.dtype_global = false;
            self.dtype_code = Some(s.clone());
            self.wrapper_dtype(&s);
        }
        if let Some(w) = &mut self.wrapper {
            w.in_shape = s == "shape";
            match s.as_str() {
                "allow_mmap" => w.ready = true,
                "numpy_array_alignment_bytes" => w.want_align = true,
                _ => {}
            }
        }
        self.stack.push(Item::Str(s));
    }

    /// A global was named (and pushed): recorded, then as [`Self::saw_global_again`].
    fn saw_global(&mut self, module: &str, name: &str) {
        let g = format!("{module}.{name}");
        self.out.globals.insert(g.clone());
        self.saw_global_again(&g);
        self.stack.push(Item::Global(g));
    }

    /// A global is used (named, or fetched from the memo): a joblib wrapper starts, or a
    /// wrapper's dtype follows.
    fn saw_global_again(&mut self, g: &str) {
        if g.ends_with(".NumpyArrayWrapper") {
            self.wrapper = Some(Wrapper::default());
        }
        self.dtype_global = g.starts_with("numpy") && g.ends_with(".dtype");
    }

    /// A dtype's type code, named or fetched: the wrapper's, when it has none yet.
    fn wrapper_dtype(&mut self, code: &str) {
        if let Some(w) = &mut self.wrapper {
            if w.dtype.is_none() {
                w.dtype = Some(code.to_string());
            }
        }
    }

    /// REDUCE: a dtype whose code was just named becomes an [`Item::Dtype`].
    fn reduce(&mut self) {
        self.dtype_global = false;
        self.stack.push(match self.dtype_code.take() {
            Some(code) => Item::Dtype(code),
            None => Item::Other,
        });
    }

    /// GLOBAL / INST: `module` and `name` lines.
    fn global(&mut self) -> Result<(), String> {
        let module = String::from_utf8_lossy(self.line()?).into_owned();
        let name = String::from_utf8_lossy(self.line()?).into_owned();
        self.saw_global(&module, &name);
        Ok(())
    }

    /// STACK_GLOBAL: module and name are the two strings on top of the stack, when known.
    fn stack_global(&mut self) {
        self.out.stack_global = true;
        let name = self.stack.pop();
        let module = self.stack.pop();
        match (module, name) {
            (Some(Item::Str(m)), Some(Item::Str(n))) => self.saw_global(&m, &n),
            _ => {
                self.out.globals.insert("<unresolved STACK_GLOBAL>".into());
                self.stack.push(Item::Other);
            }
        }
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
        self.memo_put(self.memo_next);
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
        if let (Some(item @ (Item::Str(_) | Item::Global(_) | Item::Dtype(_))), true) =
            (self.stack.last(), self.memo.len() < MAX_MEMO)
        {
            self.memo.insert(idx, item.clone());
        }
    }

    /// GET: push what memo index `idx` holds.
    fn memo_get(&mut self, idx: u64) {
        match self.memo.get(&idx) {
            Some(Item::Str(s)) => {
                let s = s.clone();
                self.push_string(s);
            }
            Some(Item::Global(g)) => {
                let g = g.clone();
                self.saw_global_again(&g);
                self.stack.push(Item::Global(g));
            }
            Some(Item::Dtype(code)) => {
                let code = code.clone();
                self.wrapper_dtype(&code);
                self.stack.push(Item::Dtype(code));
            }
            _ => self.stack.push(Item::Other),
        }
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
                Item::Int(_) | Item::Global(_) | Item::Dtype(_) | Item::Other => None,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Vec<u8> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/serialized");
        std::fs::read(dir.join(name)).unwrap()
    }

    fn versions(name: &str) -> serde_json::Value {
        serde_json::from_slice(&fixture(name)).unwrap()
    }

    #[test]
    fn joblib_arrays_are_sized_and_skipped_to_the_version_behind_them() {
        // Written by joblib.dump with scikit-learn 1.3.2 / NumPy 1.26.4 and 1.5.2 / 2.1.3
        // (fixtures/serialized/make_fixtures.py); sklearn*.json is what the libraries reported.
        for (file, facts) in [
            ("sklearn132_scaler.joblib", "sklearn132.json"),
            ("sklearn152_scaler.joblib", "sklearn152.json"),
        ] {
            let s = scan(&fixture(file)).unwrap();
            let want = versions(facts)["sklearn"].as_str().unwrap().to_string();
            assert_eq!(s.sklearn_version, Some(want), "{file}");
            // StandardScaler keeps mean_, var_, scale_: three raw arrays after wrappers.
            assert_eq!(s.joblib_arrays, 3, "{file}");
            assert!(s
                .globals
                .contains("sklearn.preprocessing._data.StandardScaler"));
            assert!(s.globals.contains("joblib.numpy_pickle.NumpyArrayWrapper"));
        }
    }

    #[test]
    fn joblib_object_arrays_are_nested_pickles_and_unicode_arrays_are_sized() {
        for file in ["sklearn132_mixed.joblib", "sklearn152_mixed.joblib"] {
            let buf = fixture(file);
            let s = scan(&buf).unwrap();
            assert_eq!(s.end, buf.len(), "{file}: the walk reached the final STOP");
            // labels (object: a nested pickle), names (<U2), w (float32), and the scaler's 3.
            assert_eq!(s.joblib_arrays, 6, "{file}");
            assert!(s.sklearn_version.is_some());
        }
    }

    #[test]
    fn numpy_generations_show_in_the_module_paths() {
        let np2 = scan(&fixture("numpy2_array.pkl")).unwrap();
        assert!(
            np2.globals.contains("numpy._core.numeric._frombuffer"),
            "{:?}",
            np2.globals
        );
        assert_eq!(np2.protocol, Some(5));
        let np1 = scan(&fixture("numpy1_array.pkl")).unwrap();
        assert!(
            np1.globals.iter().any(|g| g.starts_with("numpy.core.")),
            "{:?}",
            np1.globals
        );
        let scorer = scan(&fixture("sklearn132_scorer.pkl")).unwrap();
        assert!(scorer
            .globals
            .contains("sklearn.metrics._scorer._PredictScorer"));
    }

    #[test]
    fn a_deadline_in_the_past_stops_a_long_walk_with_what_it_found() {
        // 200k BININT1 + POP pairs, then STOP: long enough to reach a deadline check.
        let mut p = vec![0x80, 4];
        p.extend_from_slice(b"cos\nsystem\n");
        for _ in 0..200_000 {
            p.extend_from_slice(&[b'K', 1, b'0']);
        }
        p.push(b'.');
        let (s, stop) = scan_with(&p, Some(Instant::now()));
        assert!(stop.unwrap().contains("deadline"));
        assert!(s.globals.contains("os.system"));
        assert!(scan_with(&p, None).1.is_none());
    }

    #[test]
    fn a_hostile_joblib_shape_is_an_error_not_a_panic() {
        // A wrapper announcing a 2^40 x 2^40 float64 array.
        let mut p = vec![0x80, 4];
        p.extend_from_slice(b"cjoblib.numpy_pickle\nNumpyArrayWrapper\n");
        p.extend_from_slice(b"\x8c\x05shape\x8a\x06\x00\x00\x00\x00\x00\x01");
        p.extend_from_slice(b"\x8a\x06\x00\x00\x00\x00\x00\x01");
        p.extend_from_slice(b"cnumpy\ndtype\n\x8c\x02f8\x8c\x0aallow_mmap\x88b");
        let e = scan(&p).unwrap_err();
        assert!(e.contains("overflows") || e.contains("truncated"), "{e}");
    }
}
