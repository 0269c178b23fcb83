//! The load probe's result cache: what one environment's libraries did when a child loaded
//! them, kept under the user's cache directory so that the pre-job run of an unchanged machine
//! loads nothing (loading cuBLASLt alone costs ~170 MB and most of `check`'s time).
//!
//! An entry is keyed by everything the outcome depends on, written out in full and compared
//! byte for byte on read (no hash is trusted):
//! - the envdoctor build (version and the executable's file identity);
//! - the environment variables the loader and CUDA libraries read (`LD_*`, `CUDA_*`,
//!   `NVIDIA_*`, `GLIBC_TUNABLES`), as one SHA-256 of their names and values: those
//!   namespaces hold secrets (`NVIDIA_API_KEY`), which are never written to disk;
//! - the items in load order (family, path);
//! - the identity (device, inode, size, mtime, ctime, in ns) of the real file of every library
//!   the static model resolved for the environment, the transitive ones included, and of
//!   `/etc/ld.so.cache` (system libraries change with it).
//!
//! A changed, replaced or touched file therefore misses. Only complete outcomes are stored (no
//! `skipped`, no `timeout`). `--no-load-cache` bypasses it; `--root` never reaches it (nothing
//! is loaded there). Files are written to a temporary name and renamed, so concurrent runs
//! never read half an entry; an unreadable or foreign entry is a miss. The directory is
//! created 0700 and entries 0600; the entries of the older layout (`load-v1`, which kept the
//! variables' values verbatim) are removed when a new entry is written.

use crate::root::Env;
use crate::snapshot::libs::{Library, LoadResult};
use serde::{Deserialize, Serialize};
use sha2::Digest;
use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::load::Item;

/// Cache layout version (part of the directory name).
const LAYOUT: &str = "load-v2";
/// The layout before the variables were hashed: removed on sight.
const OLD_LAYOUT: &str = "load-v1";

/// Environment variables whose value is part of the key.
fn keyed_var(name: &str) -> bool {
    name.starts_with("LD_")
        || name.starts_with("CUDA_")
        || name.starts_with("NVIDIA_")
        || name == "GLIBC_TUNABLES"
}

/// The cache directory for `env` (`$XDG_CACHE_HOME/envdoctor/load-v1`, else
/// `~/.cache/envdoctor/load-v1`); `None` when neither is known.
pub fn dir(env: &Env) -> Option<PathBuf> {
    Some(base(env)?.join(LAYOUT))
}

/// envdoctor's cache directory for `env`: `$XDG_CACHE_HOME/envdoctor`, else
/// `~/.cache/envdoctor`; `None` when neither is known.
pub(crate) fn base(env: &Env) -> Option<PathBuf> {
    let base = match env.get("XDG_CACHE_HOME").filter(|d| d.starts_with('/')) {
        Some(d) => PathBuf::from(d),
        None => env.home()?.join(".cache"),
    };
    Some(base.join("envdoctor"))
}

#[derive(Serialize, Deserialize)]
struct Entry {
    key: String,
    results: Vec<LoadResult>,
}

/// The full key text for loading `items` of `group` in a child of `exe` with `env`; `None`
/// when an identity cannot be read (then nothing is cached).
pub fn key(
    exe: &Path,
    env: &[(OsString, OsString)],
    group: &[Library],
    items: &[Item],
) -> Option<String> {
    let mut k = String::new();
    k.push_str(&format!(
        "envdoctor {} {}\n",
        env!("CARGO_PKG_VERSION"),
        identity(exe)?
    ));
    let mut vars: Vec<(String, String)> = env
        .iter()
        .filter_map(|(n, v)| {
            let n = n.to_str()?;
            keyed_var(n).then(|| (n.to_string(), v.to_string_lossy().into_owned()))
        })
        .collect();
    vars.sort();
    let mut h = sha2::Sha256::new();
    for (n, v) in vars {
        h.update(format!("{n}={v:?}\n").as_bytes());
    }
    let digest: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    k.push_str(&format!("env sha256:{digest}\n"));
    for it in items {
        k.push_str(&format!(
            "item {} {:?}\n",
            it.family.as_deref().unwrap_or("-"),
            it.path
        ));
    }
    let mut files: Vec<&str> = group
        .iter()
        .filter(|l| l.resolves)
        .filter_map(|l| l.realpath.as_deref().or(l.path.as_deref()))
        .collect();
    files.sort_unstable();
    files.dedup();
    for f in files {
        k.push_str(&format!("file {f:?} {}\n", identity(Path::new(f))?));
    }
    let cache = Path::new("/etc/ld.so.cache");
    k.push_str(&format!(
        "ld.so.cache {}\n",
        identity(cache).unwrap_or_else(|| "absent".into())
    ));
    Some(k)
}

/// `dev ino size mtime ctime` of the file `path` names (links followed).
pub(crate) fn identity(path: &Path) -> Option<String> {
    let m = std::fs::metadata(path).ok()?;
    Some(format!(
        "{}:{} {} {}.{:09} {}.{:09}",
        m.dev(),
        m.ino(),
        m.size(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec()
    ))
}

/// The entry's file name: a 128-bit FNV-1a of the key (the key itself is checked on read).
pub(crate) fn file_name(key: &str) -> String {
    let fnv = |offset: u64| {
        key.bytes().fold(offset, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    };
    format!(
        "{:016x}{:016x}.json",
        fnv(0xcbf2_9ce4_8422_2325),
        fnv(0x8422_2325_cbf2_9ce4)
    )
}

/// The stored results for `key`, marked `from_cache`, when an entry with exactly that key and
/// `n` results exists.
pub fn get(dir: &Path, key: &str, n: usize) -> Option<Vec<LoadResult>> {
    let text = std::fs::read(dir.join(file_name(key))).ok()?;
    if text.len() > 4 << 20 {
        return None;
    }
    let entry: Entry = serde_json::from_slice(&text).ok()?;
    if entry.key != key || entry.results.len() != n {
        return None;
    }
    Some(
        entry
            .results
            .into_iter()
            .map(|mut r| {
                r.from_cache = true;
                r
            })
            .collect(),
    )
}

/// Store `results` for `key` when every outcome is complete; failures to write are ignored
/// (the cache only saves time).
pub fn put(dir: &Path, key: &str, results: &[LoadResult]) {
    if results
        .iter()
        .any(|r| matches!(r.status.as_str(), "skipped" | "timeout") || r.from_cache)
    {
        return;
    }
    let entry = Entry {
        key: key.to_string(),
        results: results.to_vec(),
    };
    let Ok(json) = serde_json::to_vec(&entry) else {
        return;
    };
    write_entry(dir, &file_name(key), &json);
    prune(dir, MAX_ENTRIES);
    if let Some(old) = dir.parent().map(|p| p.join(OLD_LAYOUT)) {
        let _ = std::fs::remove_dir_all(old);
    }
}

/// Write `bytes` as entry `name` of `dir` (created 0700; the entry 0600, written to a temporary
/// name and renamed). Failures are ignored: a cache only saves time.
pub(crate) fn write_entry(dir: &Path, name: &str, bytes: &[u8]) {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    if std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .is_err()
    {
        return;
    }
    let tmp = dir.join(format!(".{name}.{}", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| std::io::Write::write_all(&mut f, bytes));
    if written.is_err() || std::fs::rename(&tmp, dir.join(name)).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// Entries kept: one per environment state; machines with many environments, or files that
/// change often, would otherwise grow the directory without end.
const MAX_ENTRIES: usize = 256;

/// Remove the least recently written entries beyond `keep`.
pub(crate) fn prune(dir: &Path, keep: usize) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<(std::time::SystemTime, PathBuf)> = rd
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    if entries.len() <= keep {
        return;
    }
    entries.sort();
    for (_, p) in &entries[..entries.len() - keep] {
        let _ = std::fs::remove_file(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_in_keyed_variables_never_reach_the_disk_and_entries_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let exe = std::env::current_exe().unwrap();
        let secret = "nvapi-SECRETSECRET";
        let env = [
            (OsString::from("NVIDIA_API_KEY"), OsString::from(secret)),
            (OsString::from("LD_LIBRARY_PATH"), OsString::from("/a")),
        ];
        let k = key(&exe, &env, &[], &[]).unwrap();
        assert!(!k.contains(secret) && !k.contains("NVIDIA_API_KEY"), "{k}");
        let other = [(
            OsString::from("NVIDIA_API_KEY"),
            OsString::from("nvapi-other"),
        )];
        assert_ne!(
            key(&exe, &other, &[], &[]).unwrap(),
            k,
            "the value still keys"
        );
        let old = t.path().join("envdoctor").join(OLD_LAYOUT);
        std::fs::create_dir_all(&old).unwrap();
        std::fs::write(old.join("x.json"), secret).unwrap();
        let dir = t.path().join("envdoctor").join(LAYOUT);
        let loaded = LoadResult {
            status: "loaded".into(),
            ..Default::default()
        };
        put(&dir, &k, &[loaded]);
        assert!(get(&dir, &k, 1).is_some());
        assert!(!old.exists(), "the old layout's entries are removed");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            assert_eq!(mode(&p), 0o600, "{}", p.display());
            assert!(!std::fs::read_to_string(&p).unwrap().contains(secret));
        }
    }

    fn lib(path: &Path) -> Library {
        Library {
            soname: "libx.so.1".into(),
            resolves: true,
            path: Some(path.display().to_string()),
            ..Default::default()
        }
    }

    #[test]
    fn a_touched_library_misses_and_an_unchanged_one_hits() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("libx.so.1");
        std::fs::write(&f, b"one").unwrap();
        let exe = std::env::current_exe().unwrap();
        let items = [Item {
            family: None,
            path: f.clone(),
        }];
        let env = [(OsString::from("LD_LIBRARY_PATH"), OsString::from("/a"))];
        let k1 = key(&exe, &env, &[lib(&f)], &items).unwrap();
        let loaded = LoadResult {
            status: "loaded".into(),
            ..Default::default()
        };
        let dir = t.path().join("cache");
        put(&dir, &k1, std::slice::from_ref(&loaded));
        let hit = get(&dir, &k1, 1).unwrap();
        assert_eq!(hit[0].status, "loaded");
        assert!(hit[0].from_cache);
        // Another LD_LIBRARY_PATH: another key.
        let env2 = [(OsString::from("LD_LIBRARY_PATH"), OsString::from("/b"))];
        assert_ne!(key(&exe, &env2, &[lib(&f)], &items).unwrap(), k1);
        // Unrelated variables are not part of it.
        let env3 = [
            env[0].clone(),
            (OsString::from("PWD"), OsString::from("/elsewhere")),
        ];
        assert_eq!(key(&exe, &env3, &[lib(&f)], &items).unwrap(), k1);
        // Rewritten with the same size: the mtime/ctime differ, so the key does.
        std::thread::sleep(std::time::Duration::from_millis(10));
        std::fs::write(&f, b"two").unwrap();
        let k2 = key(&exe, &env, &[lib(&f)], &items).unwrap();
        assert_ne!(k1, k2);
        assert!(get(&dir, &k2, 1).is_none());
        // Incomplete outcomes are not stored.
        let skipped = LoadResult {
            status: "skipped".into(),
            ..Default::default()
        };
        put(&dir, &k2, &[skipped]);
        assert!(get(&dir, &k2, 1).is_none());
        // Beyond the limit, the oldest entries go.
        for i in 0..4 {
            let k = format!("{k1}{i}");
            put(&dir, &k, std::slice::from_ref(&loaded));
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        prune(&dir, 2);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2);
        assert!(get(&dir, &format!("{k1}3"), 1).is_some());
        assert!(get(&dir, &k1, 1).is_none());
        // A missing file: no key, nothing cached.
        std::fs::remove_file(&f).unwrap();
        assert!(key(&exe, &env, &[lib(&f)], &items).is_none());
    }
}
