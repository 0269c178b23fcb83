//! What a shared object defines, looked up the way `ld.so` looks it up: through its
//! DT_GNU_HASH table ([`elf::lookup::Index`]), so a module's few hundred undefined symbols cost
//! a few reads each in `libtorch_cpu.so`, not a read of its ~150k names. Each object's index
//! (hash table and version names) is read once per probe run and shared by every interpreter
//! (20 venvs on one base interpreter read its `libc.so.6` once).

use crate::probe::libs::elf::lookup::Index;
use crate::root::Root;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Indexes by the file's real host path.
#[derive(Default)]
pub struct Cache {
    map: Mutex<HashMap<PathBuf, Option<Arc<Index>>>>,
}

impl Cache {
    /// The index of the object at `machine_path`, `None` when it cannot be read as ELF.
    pub fn get(&self, root: &Root, machine_path: &Path) -> Option<Arc<Index>> {
        let key = root
            .real_host_path(machine_path)
            .unwrap_or_else(|_| root.host_path(machine_path));
        if let Some(hit) = self.map.lock().ok()?.get(&key) {
            return hit.clone();
        }
        let e = Index::open(root, machine_path).ok().map(Arc::new);
        if let Ok(mut m) = self.map.lock() {
            m.insert(key, e.clone());
        }
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::libs::elf;

    /// Every symbol libc exports binds through the hash table as through the full table, and
    /// names it does not define do not: with its tables in memory (as [`Cache`] reads libc) and
    /// with a read per lookup (as it reads libtorch).
    #[test]
    fn hash_lookups_agree_with_the_full_symbol_table() {
        let root = Root::host();
        let libc = [
            "/lib/x86_64-linux-gnu/libc.so.6",
            "/lib64/libc.so.6",
            "/usr/lib64/libc.so.6",
        ]
        .iter()
        .map(Path::new)
        .find(|p| p.exists());
        let Some(libc) = libc else { return };
        let (_, all) = elf::read_with_symbols(&root, libc).unwrap();
        let cache = Cache::default();
        let in_memory = cache.get(&root, libc).unwrap();
        let by_reads = Index::open_with(&root, libc, 0).unwrap();
        assert!(all.exported.len() > 1000);
        assert!(in_memory.in_memory() && !by_reads.in_memory());
        for idx in [&*in_memory, &by_reads] {
            agrees_with_the_full_table(idx, &all);
        }
    }

    fn agrees_with_the_full_table(idx: &Index, all: &elf::DynSymbols) {
        for s in &all.exported {
            assert!(
                idx.binds(&s.name, s.version.as_deref()),
                "{}@{:?}",
                s.name,
                s.version
            );
            assert_eq!(
                idx.binds(&s.name, None),
                all.provides(&s.name, None),
                "{}",
                s.name
            );
        }
        assert!(idx.binds("memcpy", Some("GLIBC_2.2.5")));
        assert!(!idx.binds("memcpy", Some("GLIBC_9.99")));
        assert!(!idx.binds("_ZN3c1017RegisterOperatorsD1Ev", None));
        assert!(!idx.binds("envdoctor_no_such_symbol", None));
    }
}
