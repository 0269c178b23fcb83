//! The native-library probe: what frameworks ask the dynamic loader for, and what glibc's
//! `ld.so` will give them, emulated file by file inside a [`crate::root::Root`].
//!
//! Loader emulation (no library is ever loaded here):
//! - [`elf`]: ELF facts from the header, program headers and `PT_DYNAMIC` (soname, needed,
//!   RPATH/RUNPATH, symbol-version needs and definitions; dynamic symbols with their versions
//!   via `read_with_symbols`) and `ld.so`'s accept test per file;
//! - [`ldcache`]: the binary `/etc/ld.so.cache` (old and new layouts, hwcaps) and its
//!   staleness against `/etc/ld.so.conf`;
//! - [`search`]: the search order itself ([`search::Loader::resolve`], including LD_PRELOAD
//!   reuse, glibc-hwcaps and the glibc release's legacy subdirs) and every other copy of a
//!   library on the machine ([`search::Loader::all_candidates`]);
//! - [`links`]: symlink chains, versions claimed by names, mixed releases in one directory.
//!
//! Typical use:
//! ```no_run
//! use envdoctor::probe::libs::{search::{Loader, Object, Requester}, elf, links};
//! use envdoctor::root::{Env, Root};
//! use std::path::Path;
//! let root = Root::host();
//! let loader = Loader::new(&root, &Env::from_process());
//! let python = Object::read(&root, Path::new("/usr/bin/python3")).unwrap().main_executable();
//! let ext = Path::new("/venv/lib/python3.11/site-packages/torch/_C.so");
//! let req = Requester::new(Object::read(&root, ext).unwrap()).loaded_by(python);
//! let res = loader.resolve("libcudart.so.12", &req);
//! if let Some(p) = &res.path {
//!     let facts = links::describe(&root, p);
//!     let info = elf::read(&root, p);
//! }
//! ```

pub mod elf;
pub mod ldcache;
pub mod links;
pub mod search;
