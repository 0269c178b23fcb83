//! ELF facts the dynamic loader cares about, read the way `ld.so` reads them: from the ELF
//! header, the program headers and the `PT_DYNAMIC` segment only, so a library whose section
//! headers were stripped (or are garbage) still answers.
//!
//! Reading is bounded and positional (`pread`), never a whole-file read or an `mmap` (a file
//! truncated under an `mmap` would kill envdoctor with SIGBUS): the header, the program header
//! table, the dynamic segment, the dynamic string table (at most [`MAX_STRTAB`] bytes) and the
//! version tables. goblin parses the header and program headers; the dynamic entries and the
//! GNU version tables are walked here with explicit bounds, so a hostile file yields an
//! [`ElfError`] naming it, never a panic or an endless loop.
//!
//! Main entry points: [`read`] (everything but symbols), [`read_with_symbols`] (plus the dynamic
//! symbol table with versions) and [`check_header`] (the cheap test `ld.so` applies
//! to each candidate file before accepting it: right class, right machine, or a fatal
//! `invalid ELF header`).

use crate::root::{Root, RootError};
use crate::snapshot::libs::ElfFacts;
use goblin::container::{Container, Ctx, Endian};
use goblin::elf::header::{Header, EI_CLASS, EI_DATA, ELFCLASS32, ELFCLASS64, ELFMAG, SELFMAG};
use goblin::elf::program_header::{ProgramHeader, PT_DYNAMIC, PT_INTERP, PT_LOAD};
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Largest dynamic string table read (libtorch_cpu's is a few MB).
pub const MAX_STRTAB: u64 = 64 * 1024 * 1024;
/// The string table page read for the facts alone.
const STRTAB_PAGE: u64 = 4096;
/// The string table page read with the symbols (their names fill the table).
const SYMBOL_STRTAB_PAGE: u64 = 256 * 1024;
/// Largest dynamic segment read.
const MAX_DYNAMIC: u64 = 1024 * 1024;
/// Most version entries walked per table (a guard against cyclic `vn_next` chains).
const MAX_VERSION_ENTRIES: usize = 65_536;

/// `EM_X86_64`.
pub const EM_X86_64: u16 = 62;

/// The ELF class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElfClass {
    /// 32-bit ELF.
    Elf32,
    /// 64-bit ELF.
    Elf64,
}

impl ElfClass {
    /// `elf32` / `elf64`.
    pub fn as_str(self) -> &'static str {
        match self {
            ElfClass::Elf32 => "elf32",
            ElfClass::Elf64 => "elf64",
        }
    }
}

/// Versions an object needs from one of its dependencies (`libstdc++.so.6` → `GLIBCXX_3.4.30`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VersionNeed {
    /// The dependency's soname (`vn_file`).
    pub file: String,
    /// The version names needed from it.
    pub versions: Vec<String>,
}

/// Everything [`read`] learns about one ELF file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ElfInfo {
    /// The machine path read.
    pub path: PathBuf,
    /// 32 or 64 bit.
    pub class: ElfClass,
    /// `e_machine` (62 = x86-64).
    pub machine: u16,
    /// Little endian.
    pub little_endian: bool,
    /// `e_type` (2 = executable, 3 = shared object / PIE).
    pub e_type: u16,
    /// `PT_INTERP`, for executables.
    pub interpreter: Option<String>,
    /// DT_SONAME.
    pub soname: Option<String>,
    /// DT_NEEDED, in order.
    pub needed: Vec<String>,
    /// DT_RPATH split on `:` (raw: `$ORIGIN` not expanded). Empty entries kept.
    pub rpath: Vec<String>,
    /// DT_RUNPATH split on `:` (raw).
    pub runpath: Vec<String>,
    /// `DF_1_NODEFLIB` in DT_FLAGS_1: the cache and default dirs are not searched for its needs.
    pub nodeflib: bool,
    /// DT_VERNEED: per needed file, the version names required.
    pub version_needs: Vec<VersionNeed>,
    /// DT_VERDEF: the version names this object defines (the base entry, its own soname, left out).
    pub version_defs: Vec<String>,
}

impl ElfInfo {
    /// The machine name (`x86_64`, `aarch64`, `i386`, or `em-N`).
    pub fn machine_name(&self) -> String {
        machine_name(self.machine)
    }

    /// The snapshot's view of these facts.
    pub fn facts(&self) -> ElfFacts {
        ElfFacts {
            soname: self.soname.clone(),
            class: self.class.as_str().to_string(),
            machine: self.machine_name(),
            needed: self.needed.clone(),
            rpath: self.rpath.clone(),
            runpath: self.runpath.clone(),
        }
    }

    /// Every version name needed from the dependency called `file` (empty when none).
    pub fn needs_from(&self, file: &str) -> &[String] {
        self.version_needs
            .iter()
            .find(|n| n.file == file)
            .map(|n| n.versions.as_slice())
            .unwrap_or(&[])
    }
}

/// A name for `e_machine`.
pub fn machine_name(m: u16) -> String {
    match m {
        3 => "i386".into(),
        40 => "arm".into(),
        62 => "x86_64".into(),
        183 => "aarch64".into(),
        21 => "ppc64".into(),
        243 => "riscv".into(),
        other => format!("em-{other}"),
    }
}

/// Why a file could not be read as ELF.
#[derive(Debug, thiserror::Error)]
pub enum ElfError {
    #[error(transparent)]
    /// The file could not be reached or read through the root.
    Root(#[from] RootError),
    #[error("{path}: {source}")]
    /// An I/O error reading it.
    Io {
        /// The file.
        path: PathBuf,
        #[source]
        /// The error.
        source: std::io::Error,
    },
    #[error("{path}: not an ELF file")]
    /// The file is not ELF.
    NotElf {
        /// The file.
        path: PathBuf,
    },
    #[error("{path}: truncated ELF file ({what} lies beyond its end)")]
    /// The file ends before a part its headers point to.
    Truncated {
        /// The file.
        path: PathBuf,
        /// The part.
        what: &'static str,
    },
    #[error("{path}: malformed ELF file: {msg}")]
    /// A header or table is inconsistent.
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        msg: String,
    },
}

impl ElfError {
    /// The machine path concerned.
    pub fn path(&self) -> &Path {
        match self {
            ElfError::Root(e) => e.path(),
            ElfError::Io { path, .. }
            | ElfError::NotElf { path }
            | ElfError::Truncated { path, .. }
            | ElfError::Malformed { path, .. } => path,
        }
    }
}

/// What `ld.so` makes of a candidate file (glibc `open_verify`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeaderVerdict {
    /// A loadable object of the host's class and machine.
    Accept,
    /// ELF of the other class (32 vs 64 bit): skipped silently, the search goes on.
    OtherClass,
    /// ELF of another machine (aarch64 on x86-64): skipped silently, the search goes on.
    OtherMachine,
    /// Not ELF or too short: `ld.so` stops with this error (`invalid ELF header`,
    /// `file too short`); the search does NOT go on.
    Fatal(String),
    /// Could not be opened (missing, a directory, unreadable): the search goes on.
    Unopenable,
}

/// Check a candidate the way glibc's `open_verify` does, for a host of `class` and `machine`.
pub fn check_header(root: &Root, path: &Path, class: ElfClass, machine: u16) -> HeaderVerdict {
    let Ok(file) = root.open(path) else {
        return HeaderVerdict::Unopenable;
    };
    let mut buf = [0u8; 64];
    let n = read_up_to(&file, 0, &mut buf);
    let Ok(n) = n else {
        return HeaderVerdict::Unopenable;
    };
    let want_len = if class == ElfClass::Elf64 { 64 } else { 52 };
    if n < want_len {
        // glibc: too short to hold the header it expects.
        return HeaderVerdict::Fatal("file too short".into());
    }
    if &buf[..SELFMAG] != ELFMAG {
        return HeaderVerdict::Fatal("invalid ELF header".into());
    }
    let file_class = match buf[EI_CLASS] {
        ELFCLASS32 => ElfClass::Elf32,
        ELFCLASS64 => ElfClass::Elf64,
        _ => return HeaderVerdict::Fatal("invalid ELF header".into()),
    };
    if file_class != class {
        return HeaderVerdict::OtherClass;
    }
    // x86-64 is little endian; glibc calls any other byte order an invalid header.
    if buf[EI_DATA] != 1 {
        return HeaderVerdict::Fatal("ELF file data encoding not little-endian".into());
    }
    let m = u16::from_le_bytes([buf[18], buf[19]]);
    if m != machine {
        return HeaderVerdict::OtherMachine;
    }
    HeaderVerdict::Accept
}

fn read_up_to(file: &File, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// Bounded positional reads of one file. Small reads are served from a window read ahead
/// ([`WINDOW`] bytes): the header, the program headers and the version records are a few dozen
/// reads of 16 to 64 bytes, mostly close together.
struct Reader<'a> {
    file: File,
    len: u64,
    path: &'a Path,
    window: std::cell::RefCell<(u64, Vec<u8>)>,
}

/// Bytes read ahead for a small read.
const WINDOW: u64 = 4 * 1024;

impl<'a> Reader<'a> {
    /// Open the object at `machine_path` (links followed in `root`) and take its length.
    fn open(root: &Root, machine_path: &'a Path) -> Result<Reader<'a>, ElfError> {
        let file = root.open(machine_path)?;
        let len = file
            .metadata()
            .map_err(|source| ElfError::Io {
                path: machine_path.to_path_buf(),
                source,
            })?
            .len();
        Ok(Reader {
            file,
            len,
            path: machine_path,
            window: Default::default(),
        })
    }
}

impl Reader<'_> {
    fn bytes(&self, offset: u64, len: u64, what: &'static str) -> Result<Vec<u8>, ElfError> {
        let end = offset
            .checked_add(len)
            .ok_or_else(|| self.truncated(what))?;
        if end > self.len {
            return Err(self.truncated(what));
        }
        if len <= WINDOW / 4 {
            if let Some(b) = self.windowed(offset, end, what)? {
                return Ok(b);
            }
        }
        let mut buf = vec![0u8; len as usize];
        self.file
            .read_exact_at(&mut buf, offset)
            .map_err(|source| ElfError::Io {
                path: self.path.to_path_buf(),
                source,
            })?;
        Ok(buf)
    }
    /// `[offset, end)` from the read-ahead window, reading a new window there when it is not
    /// in the current one; `None` when the window cannot be borrowed.
    fn windowed(
        &self,
        offset: u64,
        end: u64,
        what: &'static str,
    ) -> Result<Option<Vec<u8>>, ElfError> {
        let Ok(mut w) = self.window.try_borrow_mut() else {
            return Ok(None);
        };
        let (start, bytes) = &mut *w;
        let inside = offset >= *start && end <= *start + bytes.len() as u64;
        if !inside {
            let n = WINDOW.min(self.len - offset) as usize;
            let mut buf = vec![0u8; n];
            let got = read_up_to(&self.file, offset, &mut buf).map_err(|source| ElfError::Io {
                path: self.path.to_path_buf(),
                source,
            })?;
            buf.truncate(got);
            if (got as u64) < end - offset {
                return Err(self.truncated(what));
            }
            *start = offset;
            *bytes = buf;
        }
        let from = (offset - *start) as usize;
        Ok(Some(bytes[from..from + (end - offset) as usize].to_vec()))
    }

    fn truncated(&self, what: &'static str) -> ElfError {
        ElfError::Truncated {
            path: self.path.to_path_buf(),
            what,
        }
    }
    fn malformed(&self, msg: impl Into<String>) -> ElfError {
        ElfError::Malformed {
            path: self.path.to_path_buf(),
            msg: msg.into(),
        }
    }
}

/// Little helpers over a byte slice with an endianness; out of bounds reads give `None`.
#[derive(Clone, Copy)]
struct Bytes<'b> {
    b: &'b [u8],
    le: bool,
}

impl Bytes<'_> {
    fn u16(&self, off: usize) -> Option<u16> {
        let s: [u8; 2] = self.b.get(off..off.checked_add(2)?)?.try_into().ok()?;
        Some(if self.le {
            u16::from_le_bytes(s)
        } else {
            u16::from_be_bytes(s)
        })
    }
    fn u32(&self, off: usize) -> Option<u32> {
        let s: [u8; 4] = self.b.get(off..off.checked_add(4)?)?.try_into().ok()?;
        Some(if self.le {
            u32::from_le_bytes(s)
        } else {
            u32::from_be_bytes(s)
        })
    }
    fn u64(&self, off: usize) -> Option<u64> {
        let s: [u8; 8] = self.b.get(off..off.checked_add(8)?)?.try_into().ok()?;
        Some(if self.le {
            u64::from_le_bytes(s)
        } else {
            u64::from_be_bytes(s)
        })
    }
    fn word(&self, off: usize, is64: bool) -> Option<u64> {
        if is64 {
            self.u64(off)
        } else {
            self.u32(off).map(u64::from)
        }
    }
}

const DT_NULL: u64 = 0;
const DT_NEEDED: u64 = 1;
const DT_HASH: u64 = 4;
const DT_STRTAB: u64 = 5;
const DT_SYMTAB: u64 = 6;
const DT_GNU_HASH: u64 = 0x6fff_fef5;
const DT_VERSYM: u64 = 0x6fff_fff0;
const DT_STRSZ: u64 = 10;
const DT_SONAME: u64 = 14;
const DT_RPATH: u64 = 15;
const DT_RUNPATH: u64 = 29;
const DT_FLAGS_1: u64 = 0x6fff_fffb;
const DT_VERDEF: u64 = 0x6fff_fffc;
const DT_VERDEFNUM: u64 = 0x6fff_fffd;
const DT_VERNEED: u64 = 0x6fff_fffe;
const DT_VERNEEDNUM: u64 = 0x6fff_ffff;
const DF_1_NODEFLIB: u64 = 0x800;
const VER_FLG_BASE: u16 = 1;

/// Read the loader-relevant facts of the ELF file at `machine_path` (links followed in `root`).
pub fn read(root: &Root, machine_path: &Path) -> Result<ElfInfo, ElfError> {
    let r = Reader::open(root, machine_path)?;
    read_from(&r, Symbols::None).map(|(info, _)| info)
}

/// Like [`read`], plus the dynamic symbol table: what the object exports and what it expects
/// its dependencies to provide, each with its symbol version. This reads DT_SYMTAB (sized from
/// DT_HASH or DT_GNU_HASH), so it costs more than [`read`]; use it for the static
/// undefined-symbol check (`undefined symbol: __nvJitLinkComplete_12_4, version
/// libnvJitLink.so.12`).
pub fn read_with_symbols(
    root: &Root,
    machine_path: &Path,
) -> Result<(ElfInfo, DynSymbols), ElfError> {
    let r = Reader::open(root, machine_path)?;
    let (info, syms) = read_from(&r, Symbols::All)?;
    Ok((info, syms.unwrap_or_default()))
}

/// Like [`read_with_symbols`], keeping only the undefined symbols (`exported` is empty): the
/// names of a large library's exports are not read, only what it asks others for.
pub fn read_undefined_symbols(root: &Root, machine_path: &Path) -> Result<DynSymbols, ElfError> {
    let r = Reader::open(root, machine_path)?;
    let (_, syms) = read_from(&r, Symbols::Undefined)?;
    Ok(syms.unwrap_or_default())
}

/// Which symbols [`read_from`] reads.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Symbols {
    /// None: the facts only.
    None,
    /// Every dynamic symbol.
    All,
    /// Only the undefined ones.
    Undefined,
}

/// A dynamic symbol with its version (`GLIBCXX_3.4.30`), when it has one.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct Symbol {
    /// The symbol name.
    pub name: String,
    /// Its version name, if versioned.
    pub version: Option<String>,
    /// For a definition: `false` when it is a non-default (hidden, `sym@VER`) version.
    pub default: bool,
}

/// The dynamic symbols of an object.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DynSymbols {
    /// Global/weak symbols it defines with default or protected visibility.
    pub exported: Vec<Symbol>,
    /// Symbols it needs from elsewhere (undefined, non-weak).
    pub undefined: Vec<Symbol>,
    /// Undefined weak symbols (their absence is not an error).
    pub weak_undefined: Vec<Symbol>,
}

impl DynSymbols {
    /// True when `name` (at `version`, if given) is exported as the loader would bind it:
    /// an unversioned request binds the default version; a versioned one any exact version.
    pub fn provides(&self, name: &str, version: Option<&str>) -> bool {
        self.exported.iter().any(|s| {
            s.name == name
                && match version {
                    None => s.default || s.version.is_none(),
                    Some(v) => s.version.as_deref() == Some(v) || s.version.is_none(),
                }
        })
    }
}

/// `STB_GNU_UNIQUE`: a global symbol the loader keeps one copy of per process.
const STB_GNU_UNIQUE: u8 = 10;

/// Most dynamic symbols read (libtorch_cuda has ~200k).
const MAX_SYMBOLS: u64 = 4_000_000;

/// Read the facts (and, with `want_symbols`, the dynamic symbols) of the file behind `r`.
fn read_from(
    r: &Reader<'_>,
    want_symbols: Symbols,
) -> Result<(ElfInfo, Option<DynSymbols>), ElfError> {
    let (header, is64, le) = read_header(r)?;
    let phdrs = read_program_headers(r, &header, is64, le)?;
    let mut info = ElfInfo {
        path: r.path.to_path_buf(),
        class: if is64 {
            ElfClass::Elf64
        } else {
            ElfClass::Elf32
        },
        machine: header.e_machine,
        little_endian: le,
        e_type: header.e_type,
        interpreter: None,
        soname: None,
        needed: Vec::new(),
        rpath: Vec::new(),
        runpath: Vec::new(),
        nodeflib: false,
        version_needs: Vec::new(),
        version_defs: Vec::new(),
    };

    if let Some(interp) = phdrs.iter().find(|p| p.p_type == PT_INTERP) {
        let b = r.bytes(interp.p_offset, interp.p_filesz.min(4096), "PT_INTERP")?;
        info.interpreter = Some(cstr(&b, 0).unwrap_or_default());
    }

    let Some(dynamic) = phdrs.iter().find(|p| p.p_type == PT_DYNAMIC) else {
        // A static executable or an object without dynamic section: nothing more to say.
        return Ok((info, None));
    };
    let d = Dynamic {
        entries: read_dynamic(r, dynamic, le, is64)?,
        loads: phdrs.iter().filter(|p| p.p_type == PT_LOAD).collect(),
        le,
        is64,
    };
    // The facts name a few strings: small pages. Every (undefined) symbol's name: large ones.
    let page = match want_symbols {
        Symbols::None => STRTAB_PAGE,
        Symbols::All | Symbols::Undefined => SYMBOL_STRTAB_PAGE,
    };
    let Some(strtab) = read_strtab(r, &d, page)? else {
        return Ok((info, None));
    };
    let string = |idx: u64| strtab.string(idx);
    read_dynamic_strings(&mut info, &d, &string)?;
    let index = read_versions(r, &d, &string, &mut info)?;
    if want_symbols == Symbols::None {
        return Ok((info, None));
    }
    let undefined_only = want_symbols == Symbols::Undefined;
    let syms = read_symbols(r, &d, &string, &index, undefined_only)?;
    Ok((info, Some(syms)))
}

/// The ELF identification and header: the header, whether it is 64-bit, whether little endian.
fn read_header(r: &Reader<'_>) -> Result<(Header, bool, bool), ElfError> {
    let not_elf = || ElfError::NotElf {
        path: r.path.to_path_buf(),
    };
    if r.len < 16 {
        return Err(not_elf());
    }
    let ident = r.bytes(0, 16, "the ELF identification")?;
    if &ident[..SELFMAG] != ELFMAG {
        return Err(not_elf());
    }
    let (is64, hsize) = match ident[EI_CLASS] {
        ELFCLASS64 => (true, 64u64),
        ELFCLASS32 => (false, 52u64),
        c => return Err(r.malformed(format!("unknown ELF class {c}"))),
    };
    let hbytes = r.bytes(0, hsize, "the ELF header")?;
    let header: Header =
        goblin::elf::Elf::parse_header(&hbytes).map_err(|e| r.malformed(e.to_string()))?;
    let le = match header.endianness() {
        Ok(Endian::Little) => true,
        Ok(Endian::Big) => false,
        Err(e) => return Err(r.malformed(e.to_string())),
    };
    Ok((header, is64, le))
}

/// The program header table, its entry size checked.
fn read_program_headers(
    r: &Reader<'_>,
    header: &Header,
    is64: bool,
    le: bool,
) -> Result<Vec<ProgramHeader>, ElfError> {
    let ctx = Ctx::new(
        if is64 {
            Container::Big
        } else {
            Container::Little
        },
        if le { Endian::Little } else { Endian::Big },
    );
    let phentsize: u64 = if is64 { 56 } else { 32 };
    let phnum = u64::from(header.e_phnum);
    if header.e_phnum != 0 && u64::from(header.e_phentsize) != phentsize {
        return Err(r.malformed(format!(
            "program header entry size {} (expected {phentsize})",
            header.e_phentsize
        )));
    }
    let ph_bytes = r.bytes(
        header.e_phoff,
        phnum * phentsize,
        "the program header table",
    )?;
    ProgramHeader::parse(&ph_bytes, 0, phnum as usize, ctx)
        .map_err(|e| r.malformed(format!("program headers: {e}")))
}

/// The `(tag, value)` entries of the dynamic segment, up to DT_NULL.
fn read_dynamic(
    r: &Reader<'_>,
    dynamic: &ProgramHeader,
    le: bool,
    is64: bool,
) -> Result<Vec<(u64, u64)>, ElfError> {
    let dyn_bytes = r.bytes(
        dynamic.p_offset,
        dynamic.p_filesz.min(MAX_DYNAMIC),
        "the dynamic segment",
    )?;
    let d = Bytes { b: &dyn_bytes, le };
    let entsize = if is64 { 16 } else { 8 };
    let mut dyns: Vec<(u64, u64)> = Vec::new();
    let mut off = 0usize;
    while off + entsize <= dyn_bytes.len() {
        let tag = d.word(off, is64).unwrap_or(DT_NULL);
        let val = d.word(off + entsize / 2, is64).unwrap_or(0);
        if tag == DT_NULL {
            break;
        }
        dyns.push((tag, val));
        off += entsize;
    }
    Ok(dyns)
}

/// The dynamic entries of a file with the loadable segments that map their addresses.
struct Dynamic<'p> {
    entries: Vec<(u64, u64)>,
    loads: Vec<&'p ProgramHeader>,
    le: bool,
    is64: bool,
}

impl Dynamic<'_> {
    /// The value of the first entry tagged `tag`.
    fn get(&self, tag: u64) -> Option<u64> {
        self.entries
            .iter()
            .find(|(t, _)| *t == tag)
            .map(|(_, v)| *v)
    }

    /// The file offset of virtual address `vaddr`, when a loadable segment maps it from the file.
    fn to_off(&self, vaddr: u64) -> Option<u64> {
        self.loads.iter().find_map(|p| {
            let rel = vaddr.checked_sub(p.p_vaddr)?;
            (rel < p.p_filesz).then(|| p.p_offset.checked_add(rel))?
        })
    }

    /// The file offset the entry tagged `tag` points at.
    fn offset_of(&self, tag: u64) -> Option<u64> {
        self.get(tag).and_then(|a| self.to_off(a))
    }
}

/// The dynamic string table (at most [`MAX_STRTAB`] bytes), read in pages as strings are asked
/// for: the facts name a few dozen strings of a table that holds every symbol name (tens of MB
/// in `libtorch_cuda.so`), so reading it whole cost most of the libs probe's time.
struct StrTab<'r, 'p> {
    r: &'r Reader<'p>,
    off: u64,
    size: u64,
    page: u64,
    pages: std::cell::RefCell<HashMap<u64, std::rc::Rc<Vec<u8>>>>,
}

impl StrTab<'_, '_> {
    /// The table's bytes from page `n` (the last page is short).
    fn page(&self, n: u64) -> Result<std::rc::Rc<Vec<u8>>, ElfError> {
        if let Some(p) = self.pages.borrow().get(&n) {
            return Ok(p.clone());
        }
        let start = n * self.page;
        let len = self.page.min(self.size - start);
        let bytes = std::rc::Rc::new(self.r.bytes(
            self.off + start,
            len,
            "the dynamic string table",
        )?);
        self.pages.borrow_mut().insert(n, bytes.clone());
        Ok(bytes)
    }

    /// The NUL-terminated string at `idx` (lossy UTF-8; the table's end also ends it).
    fn string(&self, idx: u64) -> Result<String, ElfError> {
        if idx > self.size {
            return Err(self
                .r
                .malformed(format!("string offset {idx} outside the string table")));
        }
        let mut out = Vec::new();
        let mut at = idx;
        while at < self.size {
            let n = at / self.page;
            let page = self.page(n)?;
            let rest = page
                .get((at - n * self.page) as usize..)
                .unwrap_or_default();
            if let Some(end) = rest.iter().position(|c| *c == 0) {
                out.extend_from_slice(&rest[..end]);
                break;
            }
            out.extend_from_slice(rest);
            at = (n + 1) * self.page;
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    }
}

/// The dynamic string table of `d`, read in pages of `page` bytes; `None` when there is none
/// and no entry names a string.
fn read_strtab<'r, 'p>(
    r: &'r Reader<'p>,
    d: &Dynamic<'_>,
    page: u64,
) -> Result<Option<StrTab<'r, 'p>>, ElfError> {
    let Some(strtab_addr) = d.get(DT_STRTAB) else {
        if d.entries.iter().any(|(t, _)| {
            matches!(
                *t,
                DT_NEEDED | DT_SONAME | DT_RPATH | DT_RUNPATH | DT_VERNEED | DT_VERDEF
            )
        }) {
            return Err(r.malformed("dynamic section names strings but has no DT_STRTAB"));
        }
        return Ok(None);
    };
    let strtab_off = d
        .to_off(strtab_addr)
        .ok_or_else(|| r.malformed("DT_STRTAB lies outside every loadable segment"))?;
    let size = d
        .get(DT_STRSZ)
        .unwrap_or(0)
        .min(MAX_STRTAB)
        .min(r.len.saturating_sub(strtab_off));
    Ok(Some(StrTab {
        r,
        off: strtab_off,
        size,
        page: page.max(1),
        pages: Default::default(),
    }))
}

/// DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH and DT_FLAGS_1 into `info`.
fn read_dynamic_strings(
    info: &mut ElfInfo,
    d: &Dynamic<'_>,
    string: &dyn Fn(u64) -> Result<String, ElfError>,
) -> Result<(), ElfError> {
    for &(tag, val) in &d.entries {
        match tag {
            DT_NEEDED => info.needed.push(string(val)?),
            DT_SONAME => info.soname = Some(string(val)?),
            DT_RPATH => info
                .rpath
                .extend(string(val)?.split(':').map(str::to_string)),
            DT_RUNPATH => info
                .runpath
                .extend(string(val)?.split(':').map(str::to_string)),
            DT_FLAGS_1 => info.nodeflib |= val & DF_1_NODEFLIB != 0,
            _ => {}
        }
    }
    Ok(())
}

/// DT_VERNEED and DT_VERDEF into `info`; the version index (as used by DT_VERSYM) → name.
fn read_versions(
    r: &Reader<'_>,
    d: &Dynamic<'_>,
    string: &dyn Fn(u64) -> Result<String, ElfError>,
    info: &mut ElfInfo,
) -> Result<Vec<(u16, String)>, ElfError> {
    let mut index: Vec<(u16, String)> = Vec::new();
    if let (Some(addr), Some(num)) = (d.get(DT_VERNEED), d.get(DT_VERNEEDNUM)) {
        let start = d
            .to_off(addr)
            .ok_or_else(|| r.malformed("DT_VERNEED outside loadable segments"))?;
        info.version_needs = read_verneed(r, start, num, d.le, string, &mut index)?;
    }
    if let (Some(addr), Some(num)) = (d.get(DT_VERDEF), d.get(DT_VERDEFNUM)) {
        let start = d
            .to_off(addr)
            .ok_or_else(|| r.malformed("DT_VERDEF outside loadable segments"))?;
        info.version_defs = read_verdef(r, start, num, d.le, string, &mut index)?;
    }
    Ok(index)
}

/// The dynamic symbol table (sized from DT_HASH or DT_GNU_HASH), each symbol with its version
/// from DT_VERSYM and `index`, sorted into exported, undefined and weak undefined.
fn read_symbols(
    r: &Reader<'_>,
    d: &Dynamic<'_>,
    string: &dyn Fn(u64) -> Result<String, ElfError>,
    index: &[(u16, String)],
    undefined_only: bool,
) -> Result<DynSymbols, ElfError> {
    let (le, is64) = (d.le, d.is64);
    let Some(symtab) = d.offset_of(DT_SYMTAB) else {
        return Ok(DynSymbols::default());
    };
    let count = match (d.offset_of(DT_GNU_HASH), d.offset_of(DT_HASH)) {
        (_, Some(h)) => {
            let b = r.bytes(h, 8, "DT_HASH")?;
            u64::from(Bytes { b: &b, le }.u32(4).unwrap_or(0))
        }
        (Some(g), None) => gnu_hash_count(r, g, le, is64)?,
        (None, None) => 0,
    }
    .min(MAX_SYMBOLS);
    let entsize: u64 = if is64 { 24 } else { 16 };
    let table = r.bytes(symtab, count * entsize, "the dynamic symbol table")?;
    let versym = match d.offset_of(DT_VERSYM) {
        Some(v) => Some(r.bytes(v, count * 2, "DT_VERSYM")?),
        None => None,
    };
    let t = Bytes { b: &table, le };
    let mut syms = DynSymbols::default();
    for i in 1..count as usize {
        let Some((name, info_b, other, shndx)) = raw_symbol(t, i * entsize as usize, is64) else {
            break;
        };
        if undefined_only && shndx != 0 {
            continue;
        }
        let name = string(u64::from(name))?;
        if name.is_empty() {
            continue;
        }
        let bind = info_b >> 4;
        let vis = other & 3;
        let vs = versym
            .as_ref()
            .and_then(|v| Bytes { b: v, le }.u16(i * 2))
            .unwrap_or(1);
        let sym = Symbol {
            name,
            version: version_name(index, vs),
            default: vs & 0x8000 == 0,
        };
        if shndx == 0 {
            if bind == 2 {
                syms.weak_undefined.push(sym);
            } else if bind == 1 {
                syms.undefined.push(sym);
            }
        } else if matches!(bind, 1 | 2 | STB_GNU_UNIQUE) && (vis == 0 || vis == 3) {
            // STB_GNU_UNIQUE: template statics of libstdc++ (`std::string::_Rep::_S_empty_rep_storage`)
            // bind like globals.
            syms.exported.push(sym);
        }
    }
    Ok(syms)
}

/// The symbol table entry at byte `at`: `(st_name, st_info, st_other, st_shndx)`, `None` when
/// the table ends inside it.
fn raw_symbol(t: Bytes<'_>, at: usize, is64: bool) -> Option<(u32, u8, u8, u16)> {
    let (name, info_b, other, shndx) = if is64 {
        (
            t.u32(at),
            t.b.get(at + 4).copied(),
            t.b.get(at + 5).copied(),
            t.u16(at + 6),
        )
    } else {
        (
            t.u32(at),
            t.b.get(at + 12).copied(),
            t.b.get(at + 13).copied(),
            t.u16(at + 14),
        )
    };
    Some((name?, info_b?, other?, shndx?))
}

/// The version name of DT_VERSYM entry `vs` (its hidden bit ignored); `None` for the local and
/// global indexes 0 and 1.
fn version_name(index: &[(u16, String)], vs: u16) -> Option<String> {
    let vidx = vs & 0x7fff;
    if vidx >= 2 {
        index
            .iter()
            .find(|(n, _)| *n == vidx)
            .map(|(_, s)| s.clone())
    } else {
        None
    }
}

/// The number of dynamic symbols, from a DT_GNU_HASH table: one past the highest index any
/// bucket's chain reaches.
fn gnu_hash_count(r: &Reader<'_>, at: u64, le: bool, is64: bool) -> Result<u64, ElfError> {
    let h = r.bytes(at, 16, "DT_GNU_HASH")?;
    let hb = Bytes { b: &h, le };
    let nbuckets = u64::from(hb.u32(0).unwrap_or(0));
    let symoffset = u64::from(hb.u32(4).unwrap_or(0));
    let bloom = u64::from(hb.u32(8).unwrap_or(0));
    let word = if is64 { 8 } else { 4 };
    let buckets_at = at + 16 + bloom * word;
    if nbuckets > MAX_SYMBOLS {
        return Err(r.malformed("absurd DT_GNU_HASH bucket count"));
    }
    let b = r.bytes(buckets_at, nbuckets * 4, "DT_GNU_HASH buckets")?;
    let bb = Bytes { b: &b, le };
    let max = (0..nbuckets as usize)
        .filter_map(|i| bb.u32(i * 4))
        .max()
        .map(u64::from)
        .unwrap_or(0);
    if max < symoffset {
        return Ok(symoffset);
    }
    let chains_at = buckets_at + nbuckets * 4;
    let mut idx = max;
    loop {
        if idx - symoffset > MAX_SYMBOLS {
            return Err(r.malformed("DT_GNU_HASH chain does not end"));
        }
        let c = r.bytes(chains_at + (idx - symoffset) * 4, 4, "a DT_GNU_HASH chain")?;
        if (Bytes { b: &c, le }).u32(0).unwrap_or(1) & 1 == 1 {
            return Ok(idx + 1);
        }
        idx += 1;
    }
}

/// Walk Elf_Verneed / Elf_Vernaux records (same layout in both classes).
fn read_verneed(
    r: &Reader<'_>,
    start: u64,
    num: u64,
    le: bool,
    string: &dyn Fn(u64) -> Result<String, ElfError>,
    index: &mut Vec<(u16, String)>,
) -> Result<Vec<VersionNeed>, ElfError> {
    let mut out = Vec::new();
    let mut at = start;
    let mut walked = 0usize;
    for _ in 0..num.min(MAX_VERSION_ENTRIES as u64) {
        let b = r.bytes(at, 16, "a DT_VERNEED entry")?;
        let v = Bytes { b: &b, le };
        let cnt = v.u16(2).unwrap_or(0);
        let file = v.u32(4).unwrap_or(0);
        let aux = v.u32(8).unwrap_or(0);
        let next = v.u32(12).unwrap_or(0);
        let mut need = VersionNeed {
            file: string(u64::from(file))?,
            versions: Vec::new(),
        };
        let mut a = at
            .checked_add(u64::from(aux))
            .ok_or_else(|| r.truncated("a Vernaux entry"))?;
        for _ in 0..cnt {
            walked += 1;
            if walked > MAX_VERSION_ENTRIES {
                return Err(r.malformed("too many version entries (a cycle?)"));
            }
            let ab = r.bytes(a, 16, "a Vernaux entry")?;
            let av = Bytes { b: &ab, le };
            let vname = string(u64::from(av.u32(8).unwrap_or(0)))?;
            index.push((av.u16(6).unwrap_or(0) & 0x7fff, vname.clone()));
            need.versions.push(vname);
            let anext = av.u32(12).unwrap_or(0);
            if anext == 0 {
                break;
            }
            a = a
                .checked_add(u64::from(anext))
                .ok_or_else(|| r.truncated("a Vernaux entry"))?;
        }
        out.push(need);
        if next == 0 {
            break;
        }
        at = at
            .checked_add(u64::from(next))
            .ok_or_else(|| r.truncated("a DT_VERNEED entry"))?;
    }
    Ok(out)
}

/// Walk Elf_Verdef / Elf_Verdaux records; the first aux of each definition is its name.
fn read_verdef(
    r: &Reader<'_>,
    start: u64,
    num: u64,
    le: bool,
    string: &dyn Fn(u64) -> Result<String, ElfError>,
    index: &mut Vec<(u16, String)>,
) -> Result<Vec<String>, ElfError> {
    let mut out = Vec::new();
    let mut at = start;
    for _ in 0..num.min(MAX_VERSION_ENTRIES as u64) {
        let b = r.bytes(at, 20, "a DT_VERDEF entry")?;
        let v = Bytes { b: &b, le };
        let flags = v.u16(2).unwrap_or(0);
        let ndx = v.u16(4).unwrap_or(0);
        let cnt = v.u16(6).unwrap_or(0);
        let aux = v.u32(12).unwrap_or(0);
        let next = v.u32(16).unwrap_or(0);
        if cnt > 0 && flags & VER_FLG_BASE == 0 {
            let a = at
                .checked_add(u64::from(aux))
                .ok_or_else(|| r.truncated("a Verdaux entry"))?;
            let ab = r.bytes(a, 8, "a Verdaux entry")?;
            let av = Bytes { b: &ab, le };
            let vname = string(u64::from(av.u32(0).unwrap_or(0)))?;
            index.push((ndx & 0x7fff, vname.clone()));
            out.push(vname);
        }
        if next == 0 {
            break;
        }
        at = at
            .checked_add(u64::from(next))
            .ok_or_else(|| r.truncated("a DT_VERDEF entry"))?;
    }
    Ok(out)
}

/// The NUL-terminated string at `off` (lossy UTF-8); `None` when `off` is out of range.
fn cstr(b: &[u8], off: usize) -> Option<String> {
    let rest = b.get(off..)?;
    let end = rest.iter().position(|c| *c == 0).unwrap_or(rest.len());
    Some(String::from_utf8_lossy(&rest[..end]).into_owned())
}

/// One section header of a 64-bit little-endian ELF file, as [`sections`] reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Section {
    /// The name, from the section-name table (empty when its offset is outside the table).
    pub name: Vec<u8>,
    /// `sh_type` ([`SHT_PROGBITS`] for data).
    pub kind: u32,
    /// `sh_offset`.
    pub offset: u64,
    /// `sh_size`, as stated (the caller bounds it by the file).
    pub size: u64,
}

/// `sh_type` of a section that holds the program's data.
pub const SHT_PROGBITS: u32 = 1;

/// The section headers of the 64-bit little-endian ELF file `file` (`len` bytes), for the readers
/// of literal strings (framework sonames, the CUDA tools' versions). Three bounded positional
/// reads: the ELF header, the section table (at most 8192 entries of 64 bytes, inside the file),
/// the section-name table (at most 1 MiB, inside the file). `None` for anything else (not
/// ELF64 LE, no section table, one that is garbage): the callers then read the file whole,
/// bounded. The loader never needs this ([`read`] goes by program headers, as `ld.so` does).
pub fn sections(file: &File, len: u64) -> Option<Vec<Section>> {
    let mut h = [0u8; 64];
    file.read_exact_at(&mut h, 0).ok()?;
    if &h[..SELFMAG] != ELFMAG || h[EI_CLASS] != ELFCLASS64 || h[EI_DATA] != 1 {
        return None;
    }
    let shoff = le_u64(&h, 0x28)?;
    let (entsize, num, strndx) = (le_u16(&h, 0x3a)?, le_u16(&h, 0x3c)?, le_u16(&h, 0x3e)?);
    if entsize != 64 || num == 0 || num > 8192 || strndx >= num {
        return None;
    }
    let table_len = u64::from(num) * 64;
    if shoff.checked_add(table_len)? > len {
        return None;
    }
    let mut table = vec![0u8; usize::try_from(table_len).ok()?];
    file.read_exact_at(&mut table, shoff).ok()?;
    let entry = |i: u16| table.get(usize::from(i) * 64..usize::from(i) * 64 + 64);
    let names_entry = entry(strndx)?;
    let (names_off, names_len) = (le_u64(names_entry, 0x18)?, le_u64(names_entry, 0x20)?);
    if names_len > 1 << 20 || names_off.checked_add(names_len)? > len {
        return None;
    }
    let mut names = vec![0u8; usize::try_from(names_len).ok()?];
    file.read_exact_at(&mut names, names_off).ok()?;
    (0..num)
        .map(|i| {
            let e = entry(i)?;
            let at = usize::try_from(le_u32(e, 0)?).ok()?;
            let name = names.get(at..).unwrap_or_default();
            let name = &name[..name.iter().position(|b| *b == 0).unwrap_or(name.len())];
            Some(Section {
                name: name.to_vec(),
                kind: le_u32(e, 4)?,
                offset: le_u64(e, 0x18)?,
                size: le_u64(e, 0x20)?,
            })
        })
        .collect()
}

fn le_u16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn le_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn le_u64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Symbol lookups the way `ld.so` does them: through the DT_GNU_HASH table (bloom filter,
/// buckets, chains), reading only the symbol entries, names and DT_VERSYM entries a lookup
/// lands on, never the whole `.dynsym`/`.dynstr` (`libtorch_cpu.so` has ~150k symbols and tens
/// of MB of names). An object without DT_GNU_HASH (old toolchains: DT_HASH only) falls back to
/// [`read_with_symbols`].
pub mod lookup {
    use super::*;

    /// The GNU hash of a symbol name (`dl_new_hash`).
    pub fn gnu_hash(name: &[u8]) -> u32 {
        name.iter().fold(5381u32, |h, c| {
            h.wrapping_mul(33).wrapping_add(u32::from(*c))
        })
    }

    struct Gnu {
        nbuckets: u32,
        symoffset: u32,
        bloom: Vec<u64>,
        shift: u32,
        buckets: Vec<u32>,
        chains: Vec<u32>,
    }

    /// One object's dynamic symbols, ready for lookups.
    pub struct Index {
        file: File,
        len: u64,
        le: bool,
        is64: bool,
        symtab: u64,
        versym: Option<u64>,
        strtab: u64,
        versions: Vec<(u16, String)>,
        gnu: Option<Gnu>,
        all: Option<DynSymbols>,
        /// The symbol, string and version tables in memory, when they are small.
        tables: Option<Tables>,
    }

    /// An object's `.dynsym`, `.dynstr` and `.gnu.version`, read whole.
    struct Tables {
        sym: Vec<u8>,
        strs: Vec<u8>,
        versym: Vec<u8>,
    }

    /// Largest symbol + string + version tables read whole for lookups (libpython's are ~0.5
    /// MB: a module's few hundred lookups are then no reads at all); larger ones
    /// (`libtorch_cpu.so`: tens of MB) are read a few bytes per lookup.
    const TABLES_IN_MEMORY: u64 = 4 * 1024 * 1024;

    /// The tables of an object whose symbols the hash table counts as `count`, when small.
    fn small_tables(r: &Reader<'_>, d: &Dynamic<'_>, count: u64, limit: u64) -> Option<Tables> {
        let entsize: u64 = if d.is64 { 24 } else { 16 };
        let (symtab, strtab) = (d.offset_of(DT_SYMTAB)?, d.offset_of(DT_STRTAB)?);
        let strsz = d.get(DT_STRSZ)?;
        let versym = d.offset_of(DT_VERSYM);
        let total = count
            .checked_mul(entsize)?
            .checked_add(strsz)?
            .checked_add(if versym.is_some() { count * 2 } else { 0 })?;
        if total > limit {
            return None;
        }
        Some(Tables {
            sym: r
                .bytes(symtab, count * entsize, "the dynamic symbol table")
                .ok()?,
            strs: r.bytes(strtab, strsz, "the dynamic string table").ok()?,
            versym: match versym {
                Some(v) => r.bytes(v, count * 2, "DT_VERSYM").ok()?,
                None => Vec::new(),
            },
        })
    }

    impl Index {
        /// Open the object at `machine_path` and read its hash table and version names (and
        /// its symbol tables, when they are small).
        pub fn open(root: &Root, machine_path: &Path) -> Result<Index, ElfError> {
            Index::open_with(root, machine_path, TABLES_IN_MEMORY)
        }

        /// [`Index::open`], reading the symbol tables whole only when they are at most
        /// `in_memory` bytes (0: always look up through reads).
        pub fn open_with(
            root: &Root,
            machine_path: &Path,
            in_memory: u64,
        ) -> Result<Index, ElfError> {
            let r = Reader::open(root, machine_path)?;
            let (header, is64, le) = read_header(&r)?;
            let phdrs = read_program_headers(&r, &header, is64, le)?;
            let dynamic = phdrs
                .iter()
                .find(|p| p.p_type == PT_DYNAMIC)
                .ok_or_else(|| r.malformed("no dynamic segment"))?;
            let d = Dynamic {
                entries: read_dynamic(&r, dynamic, le, is64)?,
                loads: phdrs.iter().filter(|p| p.p_type == PT_LOAD).collect(),
                le,
                is64,
            };
            let strtab = d
                .offset_of(DT_STRTAB)
                .ok_or_else(|| r.malformed("no DT_STRTAB"))?;
            let symtab = d
                .offset_of(DT_SYMTAB)
                .ok_or_else(|| r.malformed("no DT_SYMTAB"))?;
            let versym = d.offset_of(DT_VERSYM);
            let string = |idx: u64| {
                name_at(&r, strtab, idx).map(|b| String::from_utf8_lossy(&b).into_owned())
            };
            let mut scratch = ElfInfo {
                path: machine_path.to_path_buf(),
                class: ElfClass::Elf64,
                machine: header.e_machine,
                little_endian: le,
                e_type: header.e_type,
                interpreter: None,
                soname: None,
                needed: Vec::new(),
                rpath: Vec::new(),
                runpath: Vec::new(),
                nodeflib: false,
                version_needs: Vec::new(),
                version_defs: Vec::new(),
            };
            let versions = read_versions(&r, &d, &string, &mut scratch)?;
            let gnu = match d.offset_of(DT_GNU_HASH) {
                Some(g) => Some(read_gnu(&r, g, le, is64)?),
                None => None,
            };
            let all = if gnu.is_none() {
                Some(read_symbols(&r, &d, &string, &versions, false)?)
            } else {
                None
            };
            let tables = gnu.as_ref().and_then(|g| {
                let count = u64::from(g.symoffset) + g.chains.len() as u64;
                small_tables(&r, &d, count, in_memory)
            });
            let Reader { file, len, .. } = r;
            Ok(Index {
                file,
                len,
                le,
                is64,
                symtab,
                versym,
                strtab,
                versions,
                gnu,
                all,
                tables,
            })
        }

        /// `len` bytes at `off`, `None` past the end or on a read error.
        fn pread(&self, off: u64, len: u64) -> Option<Vec<u8>> {
            if off.checked_add(len)? > self.len {
                return None;
            }
            let mut buf = vec![0u8; len as usize];
            self.file.read_exact_at(&mut buf, off).ok()?;
            Some(buf)
        }

        /// True when the NUL-terminated name at `idx` of the string table is `want`.
        fn name_is(&self, idx: u64, want: &[u8]) -> bool {
            match &self.tables {
                Some(t) => usize::try_from(idx)
                    .ok()
                    .and_then(|i| t.strs.get(i..))
                    .is_some_and(|rest| {
                        let end = rest.iter().position(|c| *c == 0).unwrap_or(rest.len());
                        &rest[..end] == want
                    }),
                None => self.name(idx).as_deref() == Some(want),
            }
        }

        /// The NUL-terminated name at `idx` of the string table.
        fn name(&self, idx: u64) -> Option<Vec<u8>> {
            let mut out = Vec::new();
            let mut at = self.strtab.checked_add(idx)?;
            while out.len() < 64 * 1024 {
                let n = 256.min(self.len.saturating_sub(at));
                let b = self.pread(at, n).filter(|b| !b.is_empty())?;
                if let Some(end) = b.iter().position(|c| *c == 0) {
                    out.extend_from_slice(&b[..end]);
                    return Some(out);
                }
                out.extend_from_slice(&b);
                at += n;
            }
            None
        }

        /// Whether a reference to `name` (at `version`) binds to a definition here, as glibc's
        /// `check_match` decides: a defined, global/weak/unique symbol of default or protected
        /// visibility; unversioned references take the default version or an unversioned
        /// definition, versioned ones that exact version or an unversioned definition.
        pub fn binds(&self, name: &str, version: Option<&str>) -> bool {
            if let Some(all) = &self.all {
                return all.provides(name, version);
            }
            let Some(g) = &self.gnu else { return false };
            let h = gnu_hash(name.as_bytes());
            let bits = if self.is64 { 64 } else { 32 };
            if g.bloom.is_empty() || g.nbuckets == 0 {
                return false;
            }
            let word = g.bloom[((h / bits) as usize) % g.bloom.len()];
            let mask = (1u64 << (h % bits)) | (1u64 << ((h >> g.shift) % bits));
            if word & mask != mask {
                return false;
            }
            let mut idx = g.buckets[(h % g.nbuckets) as usize];
            if idx < g.symoffset {
                return false;
            }
            loop {
                let Some(&ch) = g.chains.get((idx - g.symoffset) as usize) else {
                    return false;
                };
                if (ch | 1) == (h | 1) && self.matches(idx, name, version) {
                    return true;
                }
                if ch & 1 == 1 {
                    return false;
                }
                idx += 1;
            }
        }

        /// True when its tables were read whole (lookups read nothing more).
        pub fn in_memory(&self) -> bool {
            self.tables.is_some()
        }

        /// The symbol table entry `idx`.
        fn symbol(&self, idx: u32) -> Option<std::borrow::Cow<'_, [u8]>> {
            let entsize: u64 = if self.is64 { 24 } else { 16 };
            let at = u64::from(idx) * entsize;
            match &self.tables {
                Some(t) => t
                    .sym
                    .get(usize::try_from(at).ok()?..usize::try_from(at + entsize).ok()?)
                    .map(std::borrow::Cow::Borrowed),
                None => self
                    .pread(self.symtab + at, entsize)
                    .map(std::borrow::Cow::Owned),
            }
        }

        /// The DT_VERSYM entry of symbol `idx` (1, global, without one).
        fn version_index(&self, idx: u32) -> u16 {
            let at = u64::from(idx) * 2;
            let b = match (&self.tables, self.versym) {
                (_, None) => return 1,
                (Some(t), Some(_)) => usize::try_from(at)
                    .ok()
                    .and_then(|a| t.versym.get(a..a + 2))
                    .map(std::borrow::Cow::Borrowed),
                (None, Some(v)) => self.pread(v + at, 2).map(std::borrow::Cow::Owned),
            };
            b.and_then(|b| Bytes { b: &b, le: self.le }.u16(0))
                .unwrap_or(1)
        }

        fn matches(&self, idx: u32, name: &str, version: Option<&str>) -> bool {
            let Some(b) = self.symbol(idx) else {
                return false;
            };
            let Some((st_name, info_b, other, shndx)) =
                raw_symbol(Bytes { b: &b, le: self.le }, 0, self.is64)
            else {
                return false;
            };
            let bind = info_b >> 4;
            if shndx == 0 || !matches!(bind, 1 | 2 | STB_GNU_UNIQUE) || !matches!(other & 3, 0 | 3)
            {
                return false;
            }
            if !self.name_is(u64::from(st_name), name.as_bytes()) {
                return false;
            }
            let vs = self.version_index(idx);
            let def = version_name(&self.versions, vs);
            match (version, def) {
                (_, None) => true,
                (None, Some(_)) => vs & 0x8000 == 0,
                (Some(want), Some(have)) => want == have,
            }
        }
    }

    /// The NUL-terminated name at `idx` of the string table at `strtab`, read in pieces.
    fn name_at(r: &Reader<'_>, strtab: u64, idx: u64) -> Result<Vec<u8>, ElfError> {
        let mut out = Vec::new();
        let mut at = strtab
            .checked_add(idx)
            .ok_or_else(|| r.truncated("a name"))?;
        while out.len() < 64 * 1024 {
            let n = 256.min(r.len.saturating_sub(at));
            if n == 0 {
                return Err(r.truncated("a name"));
            }
            let b = r.bytes(at, n, "a name")?;
            if let Some(end) = b.iter().position(|c| *c == 0) {
                out.extend_from_slice(&b[..end]);
                return Ok(out);
            }
            out.extend_from_slice(&b);
            at += n;
        }
        Err(r.malformed("a symbol name without end"))
    }

    fn read_gnu(r: &Reader<'_>, at: u64, le: bool, is64: bool) -> Result<Gnu, ElfError> {
        let h = r.bytes(at, 16, "DT_GNU_HASH")?;
        let hb = Bytes { b: &h, le };
        let nbuckets = hb.u32(0).unwrap_or(0);
        let symoffset = hb.u32(4).unwrap_or(0);
        let nbloom = u64::from(hb.u32(8).unwrap_or(0));
        let shift = hb.u32(12).unwrap_or(0);
        if u64::from(nbuckets) > MAX_SYMBOLS || nbloom > MAX_SYMBOLS {
            return Err(r.malformed("absurd DT_GNU_HASH sizes"));
        }
        let word = if is64 { 8 } else { 4 };
        let bb = r.bytes(at + 16, nbloom * word, "DT_GNU_HASH bloom")?;
        let bloom = (0..nbloom as usize)
            .filter_map(|i| Bytes { b: &bb, le }.word(i * word as usize, is64))
            .collect();
        let buckets_at = at + 16 + nbloom * word;
        let b = r.bytes(buckets_at, u64::from(nbuckets) * 4, "DT_GNU_HASH buckets")?;
        let buckets = (0..nbuckets as usize)
            .filter_map(|i| Bytes { b: &b, le }.u32(i * 4))
            .collect();
        let count = gnu_hash_count(r, at, le, is64)?;
        let nchains = count.saturating_sub(u64::from(symoffset));
        let c = r.bytes(
            buckets_at + u64::from(nbuckets) * 4,
            nchains * 4,
            "DT_GNU_HASH chains",
        )?;
        let chains = (0..nchains as usize)
            .filter_map(|i| Bytes { b: &c, le }.u32(i * 4))
            .collect();
        Ok(Gnu {
            nbuckets,
            symoffset,
            bloom,
            shift,
            buckets,
            chains,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root_with(name: &str, bytes: &[u8]) -> (tempfile::TempDir, Root) {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join(name), bytes).unwrap();
        let root = Root::new(t.path());
        (t, root)
    }

    /// The section table of a real executable (this test binary): the sections every linker
    /// writes, with their types, inside the file; a file that is not ELF64 has none.
    #[test]
    fn the_section_table_of_this_test_binary() {
        let exe = std::env::current_exe().unwrap();
        let file = File::open(&exe).unwrap();
        let len = file.metadata().unwrap().len();
        let all = sections(&file, len).unwrap();
        let named = |n: &[u8]| all.iter().find(|s| s.name == n).unwrap();
        assert_eq!(named(b".text").kind, SHT_PROGBITS);
        assert_eq!(named(b".rodata").kind, SHT_PROGBITS);
        assert_ne!(named(b".dynsym").kind, SHT_PROGBITS);
        let r = named(b".rodata");
        assert!(r.size > 0 && r.offset + r.size <= len);
        let (_t, root) = root_with("short.so", b"\x7fELF\x02\x01");
        let short = root.open(Path::new("/short.so")).unwrap();
        assert_eq!(sections(&short, 6), None);
    }

    #[test]
    fn this_test_binary_reads_as_elf64_x86_64_with_needs() {
        let exe = std::env::current_exe().unwrap();
        let info = read(&Root::host(), &exe).unwrap();
        assert_eq!(info.class, ElfClass::Elf64);
        assert_eq!(info.machine_name(), std::env::consts::ARCH);
        assert!(info.needed.iter().any(|n| n.starts_with("libc.so")));
        assert!(info
            .needs_from("libc.so.6")
            .iter()
            .any(|v| v.starts_with("GLIBC_2.")));
    }

    #[test]
    fn libc_defines_glibc_versions() {
        let info = read(&Root::host(), Path::new("/lib/x86_64-linux-gnu/libc.so.6"));
        let Ok(info) = info else { return }; // not a Debian x86-64 layout
        assert_eq!(info.soname.as_deref(), Some("libc.so.6"));
        assert!(info.version_defs.iter().any(|v| v == "GLIBC_2.2.5"));
        assert!(!info.version_defs.iter().any(|v| v == "libc.so.6"));
    }

    #[test]
    fn garbage_and_truncations_are_errors_not_panics() {
        let (_t, root) = root_with("text.so", b"INPUT(-lfoo)\n");
        assert!(matches!(
            read(&root, Path::new("/text.so")),
            Err(ElfError::NotElf { .. })
        ));
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        // Every truncation of a real binary's first 8 KiB, and some byte flips.
        for cut in (0..8192).step_by(61) {
            let (_t, root) = root_with("cut.so", &exe[..cut]);
            let _ = read(&root, Path::new("/cut.so"));
            let _ = read_with_symbols(&root, Path::new("/cut.so"));
        }
        let mut flipped = exe[..65536.min(exe.len())].to_vec();
        for i in (0..flipped.len()).step_by(97) {
            flipped[i] ^= 0xff;
            let (_t, root) = root_with("flip.so", &flipped);
            let _ = read(&root, Path::new("/flip.so"));
            let _ = read_with_symbols(&root, Path::new("/flip.so"));
            flipped[i] ^= 0xff;
        }
    }

    #[test]
    fn header_verdicts_follow_open_verify() {
        let (_t, root) = root_with("short.so", b"\x7fELF");
        assert_eq!(
            check_header(&root, Path::new("/short.so"), ElfClass::Elf64, EM_X86_64),
            HeaderVerdict::Fatal("file too short".into())
        );
        let (_t, root) = root_with("text.so", &[b'x'; 100]);
        assert_eq!(
            check_header(&root, Path::new("/text.so"), ElfClass::Elf64, EM_X86_64),
            HeaderVerdict::Fatal("invalid ELF header".into())
        );
        let mut h = std::fs::read(std::env::current_exe().unwrap()).unwrap()[..64].to_vec();
        h[18] = 183; // aarch64
        let (_t, root) = root_with("arm.so", &h);
        assert_eq!(
            check_header(&root, Path::new("/arm.so"), ElfClass::Elf64, EM_X86_64),
            HeaderVerdict::OtherMachine
        );
        h[EI_CLASS] = ELFCLASS32;
        let (_t, root) = root_with("c32.so", &h);
        assert_eq!(
            check_header(&root, Path::new("/c32.so"), ElfClass::Elf64, EM_X86_64),
            HeaderVerdict::OtherClass
        );
        assert_eq!(
            check_header(&root, Path::new("/missing.so"), ElfClass::Elf64, EM_X86_64),
            HeaderVerdict::Unopenable
        );
    }
}
