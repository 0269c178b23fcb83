//! Answers read out of one large file, kept across runs: the `dlopen` names in libnvrtc's and
//! libcudnn_graph's read-only data (13 and 23 MB scanned), torch's architecture list in
//! libtorch_python, the version text in `ptxas`. Each is a pure function of the file's bytes,
//! so an unchanged file (same device, inode, size, mtime and ctime, in ns) gives the answer of
//! the run that read it, and a replaced, rewritten or touched one is read again.
//!
//! An entry's key is written out in full and compared on read: the envdoctor build (version and
//! the executable's identity, so a rebuilt scanner never trusts an older one's answer), the
//! question, the file's host path and identity. Entries live beside the load cache
//! (`~/.cache/envdoctor/files-v1`, 0700/0600, written to a temporary name and renamed), at most
//! [`MAX_ENTRIES`]. Only the real machine is memoised (`--root` never writes the host's cache),
//! and `--no-load-cache` turns it off.

use crate::probe::libs::load_cache::{self, file_name, identity, prune, write_entry};
use crate::root::{Env, Root};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Cache layout version (part of the directory name).
const LAYOUT: &str = "files-v1";
/// Entries kept (a machine has a few dozen such files per environment).
const MAX_ENTRIES: usize = 1024;
/// Largest entry read back.
const MAX_ENTRY: usize = 4 << 20;

/// Where answers are kept, or nowhere.
#[derive(Debug, Default)]
pub struct FileMemo {
    dir: Option<PathBuf>,
    build: String,
    /// Set once the directory has been pruned: once per run, not once per entry written.
    pruned: std::sync::atomic::AtomicBool,
}

#[derive(Serialize, Deserialize)]
struct Entry<T> {
    key: String,
    answer: T,
}

impl FileMemo {
    /// A memo that keeps nothing.
    pub fn off() -> FileMemo {
        FileMemo::default()
    }

    /// The memo for probing `root` with `env`: off under a prefix, without a cache directory or
    /// when the running executable cannot be identified.
    pub fn for_run(root: &Root, env: &Env, enabled: bool) -> FileMemo {
        if !enabled || !root.is_host() {
            return FileMemo::off();
        }
        FileMemo::in_dir(load_cache::base(env).map(|b| b.join(LAYOUT)))
    }

    /// A memo kept in `dir` (tests).
    pub fn in_dir(dir: Option<PathBuf>) -> FileMemo {
        let exe = std::env::current_exe().ok().and_then(|e| identity(&e));
        match (dir, exe) {
            (Some(dir), Some(exe)) => FileMemo {
                dir: Some(dir),
                build: format!("envdoctor {} {exe}", env!("CARGO_PKG_VERSION")),
                pruned: Default::default(),
            },
            _ => FileMemo::off(),
        }
    }

    /// The answer to `question` about the file `machine_path` names (links followed in
    /// `root`): kept, or computed by `read` and kept.
    pub fn answer<T: Serialize + DeserializeOwned>(
        &self,
        root: &Root,
        machine_path: &Path,
        question: &str,
        read: impl FnOnce() -> T,
    ) -> T {
        let Some(dir) = &self.dir else {
            return read();
        };
        let Some(key) = root.real_host_path(machine_path).ok().and_then(|p| {
            Some(format!(
                "{}\n{question}\n{p:?} {}\n",
                self.build,
                identity(&p)?
            ))
        }) else {
            return read();
        };
        let name = file_name(&key);
        if let Some(answer) = get(dir, &name, &key) {
            return answer;
        }
        let entry = Entry {
            key,
            answer: read(),
        };
        if let Ok(json) = serde_json::to_vec(&entry) {
            write_entry(dir, &name, &json);
            if !self.pruned.swap(true, std::sync::atomic::Ordering::Relaxed) {
                prune(dir, MAX_ENTRIES);
            }
        }
        entry.answer
    }
}

/// The kept answer of entry `name`, when its key is exactly `key`.
fn get<T: DeserializeOwned>(dir: &Path, name: &str, key: &str) -> Option<T> {
    let bytes = std::fs::read(dir.join(name)).ok()?;
    if bytes.len() > MAX_ENTRY {
        return None;
    }
    let entry: Entry<T> = serde_json::from_slice(&bytes).ok()?;
    (entry.key == key).then_some(entry.answer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// An unchanged file is answered from the memo; a rewritten one, another question or a
    /// memo that is off read the file again.
    #[test]
    fn an_unchanged_file_is_not_read_again_and_a_changed_one_is() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("libnvrtc.so.13");
        std::fs::write(&f, b"libnvrtc-builtins.so.13.0\0").unwrap();
        let memo = FileMemo::in_dir(Some(t.path().join("memo")));
        let root = Root::host();
        let reads = Cell::new(0);
        let scan = || {
            reads.set(reads.get() + 1);
            vec![String::from_utf8_lossy(&std::fs::read(&f).unwrap()).into_owned()]
        };
        let first = memo.answer(&root, &f, "q", scan);
        assert_eq!(memo.answer(&root, &f, "q", scan), first);
        assert_eq!(reads.get(), 1, "the second answer came from the memo");
        memo.answer(&root, &f, "another question", scan);
        assert_eq!(reads.get(), 2);
        std::thread::sleep(std::time::Duration::from_millis(10));
        std::fs::write(&f, b"libnvrtc-builtins.so.13.2\0").unwrap();
        let after = memo.answer(&root, &f, "q", scan);
        assert_eq!(reads.get(), 3, "a rewritten file is read again");
        assert_ne!(after, first);
        FileMemo::off().answer(&root, &f, "q", scan);
        assert_eq!(reads.get(), 4);
        let prefixed = FileMemo::for_run(&Root::new(t.path()), &Env::from_process(), true);
        assert!(prefixed.dir.is_none(), "--root never memoises");
    }
}
