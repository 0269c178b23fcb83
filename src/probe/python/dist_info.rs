//! Installed distributions in one `sys.path` directory: `*.dist-info/METADATA`, `*.egg-info`
//! (a directory holding `PKG-INFO`, or a file), `*.egg-link` (legacy editable installs) and
//! `direct_url.json` (PEP 660 editable installs).
//!
//! This is the hot path of the probe (a training box holds thousands of distributions), so:
//! a directory is listed once with the file types `getdents` already gives (no `stat` per entry);
//! only the metadata *headers* are read (they end at the first blank line; the long description
//! after it is never read), in 8 KiB chunks into one buffer reused for the whole directory;
//! files are opened with `O_NOFOLLOW | O_NONBLOCK` under the directory's resolved host path, so
//! the common case costs `open`, `fstat`, one `read` and `close`. Anything unusual (a symlinked
//! `.dist-info` or `METADATA`) takes the slow, careful path through [`Root`], which keeps links
//! inside the root. A FIFO, socket or device is never read: `fstat` on the non-blocking
//! descriptor refuses it, so a FIFO named `METADATA` cannot hang the probe.

use crate::root::{Root, RootError};
use crate::snapshot::python::Package;
use crate::snapshot::ProbeError;
use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// Header blocks larger than this are cut (a `License:` header can hold a whole licence text).
const MAX_HEADER_BYTES: usize = 1024 * 1024;
/// Bytes read per `read(2)` call.
const CHUNK: usize = 8 * 1024;
/// Cap for small side files (`INSTALLER`, `direct_url.json`, `.egg-link`, `requires.txt`).
const MAX_SIDE_FILE: usize = 256 * 1024;

/// What kind of entry a directory listing saw (from `d_type`, without a `stat`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// A directory.
    Dir,
    /// A regular file.
    File,
    /// A symbolic link.
    Symlink,
    /// Anything else (a FIFO, a device).
    Other,
}

/// One directory, listed once: its resolved host path and its entries sorted by name.
#[derive(Clone, Debug, Default)]
pub struct Listing {
    /// The host path of the directory with every link resolved inside the root.
    pub host: PathBuf,
    /// Entry names (raw bytes kept) and kinds, sorted by name.
    pub entries: Vec<(OsString, EntryKind)>,
}

/// List `dir` (a machine path). `Ok(None)` when it does not exist or is not a directory.
pub fn list(root: &Root, dir: &Path) -> Result<Option<Listing>, RootError> {
    let canon = match root.canonicalize(dir) {
        Ok(c) => c,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) if matches!(&e, RootError::Io { source, .. } if source.raw_os_error() == Some(libc::ENOTDIR)) => {
            return Ok(None)
        }
        Err(e) => return Err(e),
    };
    let host = root.host_path(&canon);
    let rd = match fs::read_dir(&host) {
        Ok(rd) => rd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => return Ok(None),
        Err(source) => {
            return Err(RootError::Io {
                path: dir.to_path_buf(),
                source,
            })
        }
    };
    let mut entries = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|source| RootError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let kind = match entry.file_type() {
            Ok(t) if t.is_dir() => EntryKind::Dir,
            Ok(t) if t.is_file() => EntryKind::File,
            Ok(t) if t.is_symlink() => EntryKind::Symlink,
            _ => EntryKind::Other,
        };
        entries.push((entry.file_name(), kind));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(Some(Listing { host, entries }))
}

/// PEP 503 normalisation: lower case, every run of `-`, `_`, `.` becomes one `-`.
pub fn normalize_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut in_sep = false;
    for c in name.trim().chars() {
        if matches!(c, '-' | '_' | '.') {
            if !in_sep {
                out.push('-');
            }
            in_sep = true;
        } else {
            out.push(c.to_ascii_lowercase());
            in_sep = false;
        }
    }
    out
}

/// The core-metadata headers envdoctor keeps.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Headers {
    /// `Name:`.
    pub name: Option<String>,
    /// `Version:`.
    pub version: Option<String>,
    /// Every `Requires-Dist:`.
    pub requires_dist: Vec<String>,
    /// `Requires-Python:`.
    pub requires_python: Option<String>,
    /// True when no line of the block looked like a `Key: value` header (binary garbage).
    pub garbage: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Field {
    Name,
    Version,
    RequiresDist,
    RequiresPython,
    Ignored,
}

/// Parse an RFC 822 header block (already cut at the first blank line). Continuation lines (a
/// leading space or tab) extend the previous header. Field names are case-insensitive.
pub fn parse_headers(block: &[u8]) -> Headers {
    let mut h = Headers::default();
    let mut last = Field::Ignored;
    let mut header_lines = 0usize;
    let mut other_lines = 0usize;
    for raw in block.split(|b| *b == b'\n') {
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if line.is_empty() {
            continue;
        }
        if line[0] == b' ' || line[0] == b'\t' {
            let more = String::from_utf8_lossy(trim(line));
            let target = match last {
                Field::Name => h.name.as_mut(),
                Field::Version => h.version.as_mut(),
                Field::RequiresDist => h.requires_dist.last_mut(),
                Field::RequiresPython => h.requires_python.as_mut(),
                Field::Ignored => None,
            };
            if let Some(t) = target {
                if !more.is_empty() {
                    t.push(' ');
                    t.push_str(&more);
                }
            }
            continue;
        }
        let Some(colon) = line.iter().position(|b| *b == b':') else {
            other_lines += 1;
            last = Field::Ignored;
            continue;
        };
        let key = &line[..colon];
        if key.is_empty() || !key.iter().all(|b| b.is_ascii_graphic()) {
            other_lines += 1;
            last = Field::Ignored;
            continue;
        }
        header_lines += 1;
        let field = if key.eq_ignore_ascii_case(b"name") {
            Field::Name
        } else if key.eq_ignore_ascii_case(b"version") {
            Field::Version
        } else if key.eq_ignore_ascii_case(b"requires-dist") {
            Field::RequiresDist
        } else if key.eq_ignore_ascii_case(b"requires-python") {
            Field::RequiresPython
        } else {
            Field::Ignored
        };
        last = field;
        if field == Field::Ignored {
            continue;
        }
        let value = String::from_utf8_lossy(trim(&line[colon + 1..])).into_owned();
        match field {
            Field::Name if h.name.is_none() => h.name = Some(value),
            Field::Version if h.version.is_none() => h.version = Some(value),
            Field::RequiresDist => h.requires_dist.push(value),
            Field::RequiresPython if h.requires_python.is_none() => h.requires_python = Some(value),
            _ => last = Field::Ignored,
        }
    }
    h.garbage = header_lines == 0 || other_lines > header_lines;
    h
}

fn trim(b: &[u8]) -> &[u8] {
    let start = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    let end = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &b[start..end.max(start)]
}

/// How much of a file to read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Want {
    /// The RFC 822 header block: up to the first blank line (or [`MAX_HEADER_BYTES`]).
    Headers,
    /// The first line (`INSTALLER`).
    FirstLine,
    /// All of it (up to [`MAX_SIDE_FILE`]).
    Whole,
}

/// Open `machine` and read what `want` asks into `buf` (cleared first). `host` is `machine`'s
/// host path when every directory above it is known to be resolved inside the root (the fast
/// path): the last component is opened with `O_NOFOLLOW | O_NONBLOCK`, so a link there takes
/// the careful path through [`Root::open`] and a FIFO cannot block. On the fast path the file
/// type is only checked (`fstat`) when the first read gives nothing or fails, which is what a
/// FIFO, a directory or a device gives: a regular file costs `open`, `read`, `close`.
/// `Ok(None)`: the file does not exist. `Ok(Some(false))`: the read stopped at a size cap.
fn read_into(
    root: &Root,
    machine: &Path,
    host: Option<&Path>,
    buf: &mut Vec<u8>,
    want: Want,
) -> Result<Option<bool>, RootError> {
    let io_err = |source: io::Error| RootError::Io {
        path: machine.to_path_buf(),
        source,
    };
    buf.clear();
    let (mut file, verified) = match host {
        Some(h) => match fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(h)
        {
            Ok(f) => (f, false),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => match open_slow(root, machine)? {
                Some(f) => (f, true),
                None => return Ok(None),
            },
            Err(e) => return Err(io_err(e)),
        },
        None => match open_slow(root, machine)? {
            Some(f) => (f, true),
            None => return Ok(None),
        },
    };
    match read_some(&mut file, buf, want) {
        Ok((_, 0)) if !verified => {
            verify(&file, machine)?;
            Ok(Some(true))
        }
        Ok((complete, _)) => Ok(Some(complete)),
        Err(e) => {
            if !verified {
                verify(&file, machine)?;
            }
            Err(io_err(e))
        }
    }
}

/// Refuse anything but a regular file.
fn verify(file: &File, machine: &Path) -> Result<(), RootError> {
    let md = file.metadata().map_err(|source| RootError::Io {
        path: machine.to_path_buf(),
        source,
    })?;
    if md.is_file() {
        return Ok(());
    }
    Err(RootError::NotAFile {
        path: machine.to_path_buf(),
        kind: crate::root::file_kind(&md.file_type()),
    })
}

fn open_slow(root: &Root, machine: &Path) -> Result<Option<File>, RootError> {
    match root.open(machine) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

/// Read in [`CHUNK`]s until `want` is met, EOF, or the cap. Returns (complete, bytes read).
/// For [`Want::Headers`] `buf` is cut at the blank line that ends the header block.
fn read_some(f: &mut File, buf: &mut Vec<u8>, want: Want) -> io::Result<(bool, usize)> {
    let (cap, chunk) = match want {
        Want::Headers => (MAX_HEADER_BYTES, CHUNK),
        Want::FirstLine => (MAX_SIDE_FILE, 256),
        Want::Whole => (MAX_SIDE_FILE, CHUNK),
    };
    let mut total = 0usize;
    loop {
        let old = buf.len();
        if old >= cap {
            return Ok((false, total));
        }
        buf.resize(old + chunk.min(cap - old), 0);
        let n = loop {
            match f.read(&mut buf[old..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    buf.truncate(old);
                    return Err(e);
                }
            }
        };
        buf.truncate(old + n);
        total += n;
        if n == 0 {
            return Ok((true, total));
        }
        match want {
            Want::Headers => {
                // A blank line may straddle the chunk boundary: look back two bytes.
                let from = old.saturating_sub(2);
                if let Some(end) = blank_line(&buf[from..]) {
                    buf.truncate(from + end);
                    return Ok((true, total));
                }
            }
            Want::FirstLine => {
                if memchr::memchr(b'\n', &buf[old..]).is_some() {
                    return Ok((true, total));
                }
            }
            Want::Whole => {}
        }
    }
}

/// Offset of the end of the header block (the `\n` that starts a blank line), if any.
fn blank_line(b: &[u8]) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = memchr::memchr(b'\n', &b[from..]) {
        let at = from + i;
        let rest = &b[at + 1..];
        if rest.first() == Some(&b'\n') || rest.starts_with(b"\r\n") {
            return Some(at + 1);
        }
        from = at + 1;
    }
    None
}

/// Scans one directory's distributions, reusing one read buffer.
pub struct Scanner<'a> {
    root: &'a Root,
    buf: Vec<u8>,
}

impl<'a> Scanner<'a> {
    /// A scanner reading through `root`.
    pub fn new(root: &'a Root) -> Self {
        Scanner {
            root,
            buf: Vec::with_capacity(2 * CHUNK),
        }
    }

    /// Every distribution whose metadata lies directly in `dir` (listed as `listing`), plus the
    /// projects its `.egg-link` files point at. Packages come in name order of their metadata.
    pub fn scan(
        &mut self,
        dir: &Path,
        listing: &Listing,
        errors: &mut Vec<ProbeError>,
    ) -> Vec<Package> {
        let location = dir.to_string_lossy();
        let mut out = Vec::new();
        for (name, kind) in &listing.entries {
            let bytes = name.as_bytes();
            let is_dist_info = bytes.ends_with(b".dist-info");
            let is_egg_info = bytes.ends_with(b".egg-info");
            let is_egg_link = bytes.ends_with(b".egg-link");
            if !(is_dist_info || is_egg_info || is_egg_link) {
                continue;
            }
            let machine = dir.join(name);
            if name.to_str().is_none() {
                errors.push(ProbeError::at(
                    "python",
                    &machine,
                    "the name is not valid UTF-8; it is written with replacement characters",
                ));
            }
            if *kind == EntryKind::Symlink {
                if let Err(e) = self.root.canonicalize(&machine) {
                    errors.push(ProbeError::at(
                        "python",
                        &machine,
                        format!("broken symbolic link ({e}); Python skips it"),
                    ));
                    continue;
                }
            }
            // The fast path needs the entry itself not to be a link (links resolve via Root).
            let host = (*kind != EntryKind::Symlink).then(|| listing.host.join(name));
            if is_egg_link {
                if *kind != EntryKind::Dir {
                    out.extend(self.egg_link(&machine, host.as_deref(), errors));
                }
                continue;
            }
            let dir_like = match kind {
                EntryKind::Dir => true,
                EntryKind::Symlink => self.root.is_dir(&machine),
                _ => false,
            };
            if is_dist_info && !dir_like {
                continue;
            }
            if let Some(p) = self.read_dist(&machine, host.as_deref(), dir_like, &location, errors)
            {
                out.push(p);
            }
        }
        out
    }

    /// One `.dist-info` / `.egg-info` (directory or file) at `machine`.
    fn read_dist(
        &mut self,
        machine: &Path,
        host: Option<&Path>,
        is_dir: bool,
        location: &str,
        errors: &mut Vec<ProbeError>,
    ) -> Option<Package> {
        let egg = machine.as_os_str().as_bytes().ends_with(b".egg-info");
        let (meta, meta_host) = if is_dir {
            let file = if egg { "PKG-INFO" } else { "METADATA" };
            (machine.join(file), host.map(|h| h.join(file)))
        } else {
            (machine.to_path_buf(), host.map(Path::to_path_buf))
        };
        let headers = self.read_headers(&meta, meta_host.as_deref(), errors)?;
        let mut pkg = package_of(headers, machine, location, &meta, errors)?;
        if is_dir {
            self.side_files(machine, host, egg, &mut pkg, errors);
        }
        Some(pkg)
    }

    /// The header block of the metadata file `meta`; `None` (and an error) when it is missing
    /// or unreadable.
    fn read_headers(
        &mut self,
        meta: &Path,
        meta_host: Option<&Path>,
        errors: &mut Vec<ProbeError>,
    ) -> Option<Headers> {
        match read_into(self.root, meta, meta_host, &mut self.buf, Want::Headers) {
            Ok(Some(complete)) => {
                if !complete {
                    errors.push(ProbeError::at(
                        "python",
                        meta,
                        format!(
                            "header block larger than {MAX_HEADER_BYTES} bytes; the rest is ignored"
                        ),
                    ));
                }
                Some(parse_headers(&self.buf))
            }
            Ok(None) => {
                errors.push(ProbeError::at(
                    "python",
                    meta,
                    "metadata file missing: the distribution is invisible to pip and importlib",
                ));
                None
            }
            Err(e) => {
                errors.push(ProbeError::from_root("python", &e));
                None
            }
        }
    }

    /// A small side file as text (invalid UTF-8 replaced); `Ok(None)` when absent.
    fn small(
        &mut self,
        machine: &Path,
        host: Option<&Path>,
        want: Want,
    ) -> Result<Option<String>, RootError> {
        Ok(read_into(self.root, machine, host, &mut self.buf, want)?
            .map(|_| String::from_utf8_lossy(&self.buf).into_owned()))
    }

    /// `INSTALLER`, `direct_url.json` (dist-info) or `requires.txt` (egg-info).
    fn side_files(
        &mut self,
        machine: &Path,
        host: Option<&Path>,
        egg: bool,
        pkg: &mut Package,
        errors: &mut Vec<ProbeError>,
    ) {
        let side = |name: &str| (machine.join(name), host.map(|h| h.join(name)));
        if egg {
            let (m, h) = side("requires.txt");
            match self.small(&m, h.as_deref(), Want::Whole) {
                Ok(Some(text)) => {
                    pkg.requires = egg_requires(&text).iter().map(|r| redact_url(r)).collect()
                }
                Ok(None) => {}
                Err(e) => errors.push(ProbeError::from_root("python", &e)),
            }
            return;
        }
        let (m, h) = side("INSTALLER");
        match self.small(&m, h.as_deref(), Want::FirstLine) {
            Ok(Some(text)) => {
                let first = text.lines().next().unwrap_or("").trim();
                if !first.is_empty() {
                    pkg.installer = Some(first.to_string());
                }
            }
            Ok(None) => {}
            Err(e) => errors.push(ProbeError::from_root("python", &e)),
        }
        let (m, h) = side("direct_url.json");
        match self.small(&m, h.as_deref(), Want::Whole) {
            Ok(Some(text)) => match serde_json::from_str::<serde_json::Value>(&text) {
                Ok(v) => {
                    let editable = v
                        .pointer("/dir_info/editable")
                        .and_then(|e| e.as_bool())
                        .unwrap_or(false);
                    if editable {
                        let url = v.get("url").and_then(|u| u.as_str()).unwrap_or("");
                        pkg.editable = Some(redact_url(&url_to_path(url)));
                    }
                }
                Err(e) => errors.push(ProbeError::at("python", &m, format!("invalid JSON: {e}"))),
            },
            Ok(None) => {}
            Err(e) => errors.push(ProbeError::from_root("python", &e)),
        }
    }

    /// A legacy editable install: the `.egg-link` names a project directory whose `*.egg-info`
    /// holds the metadata (pip reads them the same way).
    fn egg_link(
        &mut self,
        machine: &Path,
        host: Option<&Path>,
        errors: &mut Vec<ProbeError>,
    ) -> Vec<Package> {
        let text = match self.small(machine, host, Want::Whole) {
            Ok(Some(t)) => t,
            Ok(None) => return Vec::new(),
            Err(e) => {
                errors.push(ProbeError::from_root("python", &e));
                return Vec::new();
            }
        };
        let Some(first) = text.lines().map(str::trim).find(|l| !l.is_empty()) else {
            errors.push(ProbeError::at("python", machine, "empty .egg-link file"));
            return Vec::new();
        };
        let base = machine.parent().unwrap_or(Path::new("/"));
        let target = crate::root::lexical_normalize(&base.join(first));
        let listing = match list(self.root, &target) {
            Ok(Some(l)) => l,
            Ok(None) => {
                errors.push(ProbeError::at(
                    "python",
                    machine,
                    format!("points at {}, which does not exist", target.display()),
                ));
                return Vec::new();
            }
            Err(e) => {
                errors.push(ProbeError::from_root("python", &e));
                return Vec::new();
            }
        };
        let location = target.to_string_lossy().into_owned();
        let mut out = Vec::new();
        for (name, kind) in &listing.entries {
            if !name.as_bytes().ends_with(b".egg-info") {
                continue;
            }
            let m = target.join(name);
            let h = (*kind != EntryKind::Symlink).then(|| listing.host.join(name));
            let is_dir =
                *kind == EntryKind::Dir || (*kind == EntryKind::Symlink && self.root.is_dir(&m));
            if let Some(mut p) = self.read_dist(&m, h.as_deref(), is_dir, &location, errors) {
                p.editable = Some(location.clone());
                out.push(p);
            }
        }
        out
    }
}

/// The package the metadata headers of the distribution at `machine` describe; `None` (and an
/// error) without a name. A missing version is an error and an invalid version.
fn package_of(
    headers: Headers,
    machine: &Path,
    location: &str,
    meta: &Path,
    errors: &mut Vec<ProbeError>,
) -> Option<Package> {
    if headers.garbage && headers.name.is_none() {
        errors.push(ProbeError::at(
            "python",
            meta,
            "not a core-metadata file (no `Name:` header; binary or corrupt content)",
        ));
        return None;
    }
    let Some(raw_name) = headers.name.as_deref().filter(|n| !n.is_empty()) else {
        errors.push(ProbeError::at("python", meta, "no `Name:` header"));
        return None;
    };
    let mut pkg = Package {
        name: normalize_name(raw_name),
        location: location.to_string(),
        metadata: machine.to_string_lossy().into_owned(),
        requires_python: headers.requires_python,
        // A `name @ URL` requirement may carry credentials in its URL.
        requires: headers
            .requires_dist
            .iter()
            .map(|r| redact_url(r))
            .collect(),
        ..Default::default()
    };
    match headers.version.filter(|v| !v.is_empty()) {
        Some(v) => set_version(&mut pkg, v),
        None => {
            errors.push(ProbeError::at(
                "python",
                meta,
                format!("no `Version:` header for {}", pkg.name),
            ));
            pkg.version_valid = false;
        }
    }
    Some(pkg)
}

/// Set the raw version, its PEP 440 validity and its local label.
pub fn set_version(pkg: &mut Package, raw: String) {
    match pep440_rs::Version::from_str(&raw) {
        Ok(v) => {
            pkg.version_valid = true;
            let local: Vec<String> = v.local().iter().map(|s| s.to_string()).collect();
            pkg.local = (!local.is_empty()).then(|| local.join("."));
        }
        Err(_) => {
            pkg.version_valid = false;
            pkg.local = None;
        }
    }
    pkg.version = raw;
}

/// `requires.txt` of an egg-info as `Requires-Dist` lines: `[extra]`, `[:marker]` and
/// `[extra:marker]` sections become environment markers, as importlib.metadata renders them.
pub fn egg_requires(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut section: Option<(String, String)> = None;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(inner) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let (extra, marker) = inner.split_once(':').unwrap_or((inner, ""));
            section = Some((extra.trim().to_string(), marker.trim().to_string()));
            continue;
        }
        let req = match &section {
            None => line.to_string(),
            Some((extra, marker)) => {
                let mut conds = Vec::new();
                if !marker.is_empty() {
                    conds.push(format!("({marker})"));
                }
                if !extra.is_empty() {
                    conds.push(format!("extra == \"{extra}\""));
                }
                if conds.is_empty() {
                    line.to_string()
                } else {
                    format!("{line} ; {}", conds.join(" and "))
                }
            }
        };
        out.push(req);
    }
    out
}

/// Credentials in a URL inside `s` replaced (only when it holds a URL: plain text is kept
/// as it is, so requirement strings without URLs are untouched).
fn redact_url(s: &str) -> String {
    if s.contains("://") {
        crate::probe::env::redact_value(s)
    } else {
        s.to_string()
    }
}

/// `file:///home/u/proj%20x` → `/home/u/proj x`; other URLs are kept as they are.
fn url_to_path(url: &str) -> String {
    let Some(rest) = url.strip_prefix("file://") else {
        return url.to_string();
    };
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
            if let Ok(v) = u8::from_str_radix(hex, 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pep503_names() {
        assert_eq!(normalize_name("Scikit_Learn"), "scikit-learn");
        assert_eq!(normalize_name("zope.interface"), "zope-interface");
        assert_eq!(normalize_name("a-_.b"), "a-b");
        assert_eq!(normalize_name(" PyYAML "), "pyyaml");
    }

    #[test]
    fn headers_stop_at_the_blank_line_and_fold_continuations() {
        let text = b"Metadata-Version: 2.1\r\nName: Foo_Bar\nVersion: 2.11.0+cu130\nRequires-Dist: numpy>=1.0\nrequires-dist: six ;\n  python_version < \"3\"\nLicense: MIT\n  long text\nRequires-Python: >=3.8\n\nName: NotMe\nRequires-Dist: body\n";
        let end = blank_line(text).unwrap();
        let h = parse_headers(&text[..end]);
        assert_eq!(h.name.as_deref(), Some("Foo_Bar"));
        assert_eq!(h.version.as_deref(), Some("2.11.0+cu130"));
        assert_eq!(
            h.requires_dist,
            vec!["numpy>=1.0", "six ; python_version < \"3\""]
        );
        assert_eq!(h.requires_python.as_deref(), Some(">=3.8"));
        assert!(!h.garbage);
    }

    #[test]
    fn garbage_is_flagged() {
        let h = parse_headers(b"\x7fELF\x02\x01\x01\x00\x00\x00\xff\xfe");
        assert!(h.garbage && h.name.is_none());
    }

    #[test]
    fn versions_keep_raw_and_local() {
        let mut p = Package::default();
        set_version(&mut p, "2.11.0+cu130".into());
        assert!(p.version_valid);
        assert_eq!(p.local.as_deref(), Some("cu130"));
        set_version(&mut p, "1.0-SNAPSHOT-weird".into());
        assert!(!p.version_valid);
        assert_eq!(p.version, "1.0-SNAPSHOT-weird");
        assert_eq!(p.local, None);
        set_version(&mut p, "2.0.0.post1".into());
        assert!(p.version_valid && p.local.is_none());
    }

    #[test]
    fn egg_requires_sections_become_markers() {
        let r = egg_requires("six\n\n[socks]\nPySocks>=1.5\n[:python_version < \"3.8\"]\nimportlib-metadata\n[test:sys_platform == \"win32\"]\npywin32\n");
        assert_eq!(
            r,
            vec![
                "six".to_string(),
                "PySocks>=1.5 ; extra == \"socks\"".to_string(),
                "importlib-metadata ; (python_version < \"3.8\")".to_string(),
                "pywin32 ; (sys_platform == \"win32\") and extra == \"test\"".to_string(),
            ]
        );
    }

    #[test]
    fn credentials_in_requirement_urls_are_redacted() {
        assert_eq!(
            redact_url("pkg @ https://bob:t0k/en@pypi.example/pkg.whl"),
            "pkg @ https://bob:<redacted>@pypi.example/pkg.whl"
        );
        assert_eq!(
            redact_url("numpy>=1.21 ; python_version >= \"3.8\""),
            "numpy>=1.21 ; python_version >= \"3.8\""
        );
    }

    #[test]
    fn file_urls_become_paths() {
        assert_eq!(url_to_path("file:///home/u/my%20proj"), "/home/u/my proj");
        assert_eq!(url_to_path("https://x/y"), "https://x/y");
        assert_eq!(url_to_path("file:///a%2"), "/a%2");
    }

    #[test]
    fn a_large_header_block_is_read_in_chunks_and_the_body_is_not() {
        let t = tempfile::tempdir().unwrap();
        let site = t.path().join("site");
        let di = site.join("big-1.0.dist-info");
        fs::create_dir_all(&di).unwrap();
        let mut text = String::from("Metadata-Version: 2.1\nName: big\nVersion: 1.0\nLicense: ");
        for _ in 0..3000 {
            text.push_str("\n  lorem ipsum dolor sit amet");
        }
        text.push_str("\nRequires-Dist: tail-dep\n\nbody\n");
        fs::write(di.join("METADATA"), &text).unwrap();
        fs::write(di.join("INSTALLER"), "uv\n").unwrap();
        let root = Root::new(t.path());
        let listing = list(&root, Path::new("/site")).unwrap().unwrap();
        let mut errors = Vec::new();
        let pkgs = Scanner::new(&root).scan(Path::new("/site"), &listing, &mut errors);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(pkgs.len(), 1);
        assert_eq!(pkgs[0].requires, vec!["tail-dep"]);
        assert_eq!(pkgs[0].installer.as_deref(), Some("uv"));
        assert_eq!(pkgs[0].location, "/site");
        assert_eq!(pkgs[0].metadata, "/site/big-1.0.dist-info");
    }
}
