//! What a shared object defines, as hashes: the dynamic symbols `ld.so` binds an undefined
//! reference to, read once per file from `.dynsym`/`.gnu.version*` ([`elf::read_with_symbols`])
//! and kept as 64-bit hashes so that `libtorch_cpu.so`'s ~150k names cost a few MB, not tens.
//!
//! Binding follows glibc's `check_match`: an unversioned reference binds a symbol's default
//! version or an unversioned definition; a reference to `name@VERSION` binds that exact version,
//! or an unversioned definition (an object without version information).

use crate::probe::libs::elf;
use crate::root::Root;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The symbols one object defines.
#[derive(Debug, Default)]
pub struct Exports {
    default: HashSet<u64>,
    exact: HashSet<u64>,
    unversioned: HashSet<u64>,
}

fn h(name: &str, version: Option<&str>) -> u64 {
    let mut s = std::collections::hash_map::DefaultHasher::new();
    name.hash(&mut s);
    version.hash(&mut s);
    s.finish()
}

impl Exports {
    /// From the dynamic symbols of one object.
    pub fn of(syms: &elf::DynSymbols) -> Self {
        let mut e = Exports::default();
        for s in &syms.exported {
            match &s.version {
                None => {
                    e.unversioned.insert(h(&s.name, None));
                    e.default.insert(h(&s.name, None));
                }
                Some(v) => {
                    e.exact.insert(h(&s.name, Some(v)));
                    if s.default {
                        e.default.insert(h(&s.name, None));
                    }
                }
            }
        }
        e
    }

    /// Whether a reference to `name` (at `version`) binds here.
    pub fn binds(&self, name: &str, version: Option<&str>) -> bool {
        match version {
            None => self.default.contains(&h(name, None)),
            Some(v) => {
                self.exact.contains(&h(name, Some(v))) || self.unversioned.contains(&h(name, None))
            }
        }
    }
}

/// Exports shared by every interpreter of one probe run, keyed by the file's real host path
/// (20 venvs on one base interpreter read its `libc.so.6` once).
#[derive(Default)]
pub struct Cache {
    map: Mutex<HashMap<PathBuf, Option<Arc<Exports>>>>,
}

impl Cache {
    /// The exports of the object at `machine_path`, `None` when it cannot be read as ELF.
    pub fn get(&self, root: &Root, machine_path: &Path) -> Option<Arc<Exports>> {
        let key = root
            .real_host_path(machine_path)
            .unwrap_or_else(|_| root.host_path(machine_path));
        if let Some(hit) = self.map.lock().ok()?.get(&key) {
            return hit.clone();
        }
        let e = elf::read_with_symbols(root, machine_path)
            .ok()
            .map(|(_, s)| Arc::new(Exports::of(&s)));
        if let Ok(mut m) = self.map.lock() {
            m.insert(key, e.clone());
        }
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::libs::elf::{DynSymbols, Symbol};

    fn sym(n: &str, v: Option<&str>, default: bool) -> Symbol {
        Symbol {
            name: n.into(),
            version: v.map(str::to_string),
            default,
        }
    }

    #[test]
    fn binding_follows_check_match() {
        let e = Exports::of(&DynSymbols {
            exported: vec![
                sym("memcpy", Some("GLIBC_2.14"), true),
                sym("memcpy", Some("GLIBC_2.2.5"), false),
                sym("_ZN3c104cuda9SetDeviceEi", None, true),
            ],
            ..Default::default()
        });
        assert!(e.binds("memcpy", None));
        assert!(e.binds("memcpy", Some("GLIBC_2.2.5")));
        assert!(!e.binds("memcpy", Some("GLIBC_2.99")));
        assert!(e.binds("_ZN3c104cuda9SetDeviceEi", None));
        // An unversioned definition satisfies a versioned reference.
        assert!(e.binds("_ZN3c104cuda9SetDeviceEi", Some("V1")));
        assert!(!e.binds("_ZN3c104cuda9SetDeviceEa", None));
    }
}
