//! Each distribution's `RECORD`, read once per probe run and shared by the two stage-2 probes
//! that look for native code in it: `libs` (CUDA-linked extensions, [`crate::probe::libs`]) and
//! `extensions` (every extension module, [`crate::probe::extensions`]). On a machine with many
//! venvs reading every `RECORD` is most of their time; before, each read all of them.
//!
//! Only the shared-object entries are kept (`x.cpython-311-x86_64-linux-gnu.so`, `libfoo.so`,
//! `libfoo.so.1`): each probe filters them further.

use crate::root::Root;
use crate::snapshot::python::Package;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// Largest `RECORD` read (torch's is under 1 MB).
pub const MAX_RECORD: u64 = 16 * 1024 * 1024;

/// A distribution's shared-object entries: paths relative to its site directory, as `RECORD`
/// writes them; `None` when it has no readable `RECORD`.
pub type SharedObjects = Option<Arc<[String]>>;

/// The `RECORD`s read so far in this run, by dist-info directory.
#[derive(Default)]
pub struct Records {
    map: Mutex<HashMap<PathBuf, Arc<OnceLock<SharedObjects>>>>,
}

impl Records {
    /// The shared objects `pkg`'s `RECORD` lists, read on first use (a second probe asking for
    /// the same distribution meanwhile waits for that read).
    pub fn shared_objects(&self, root: &Root, pkg: &Package) -> SharedObjects {
        let meta = PathBuf::from(&pkg.metadata);
        let cell = match self.map.lock() {
            Ok(mut m) => Arc::clone(m.entry(meta.clone()).or_default()),
            Err(_) => Arc::new(OnceLock::new()),
        };
        cell.get_or_init(|| read(root, &meta)).clone()
    }
}

/// True for a file name that is a shared object.
fn is_shared_object(name: &str) -> bool {
    name.ends_with(".so") || name.contains(".so.")
}

/// The shared-object entries of the `RECORD` in dist-info directory `meta`.
fn read(root: &Root, meta: &Path) -> SharedObjects {
    let bytes = root.read_limited(&meta.join("RECORD"), MAX_RECORD).ok()?;
    Some(
        String::from_utf8_lossy(&bytes)
            .lines()
            .filter_map(|l| l.split(',').next())
            .map(|f| f.trim_matches('"'))
            .filter(|f| is_shared_object(f.rsplit('/').next().unwrap_or(f)))
            .map(str::to_string)
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The entries kept are the shared objects, quoted or not; the read happens once.
    #[test]
    fn shared_objects_of_a_record_are_read_once() {
        let dir = tempfile::tempdir().unwrap();
        let meta = dir.path().join("site/x-1.dist-info");
        std::fs::create_dir_all(&meta).unwrap();
        std::fs::write(
            meta.join("RECORD"),
            "x/__init__.py,sha256=a,1\n\"x/_c.cpython-311-x86_64-linux-gnu.so\",sha256=b,2\n\
             x.libs/libgomp-a34b3233.so.1.0.0,sha256=c,3\nx-1.dist-info/RECORD,,\n",
        )
        .unwrap();
        let pkg = Package {
            metadata: meta.to_string_lossy().into_owned(),
            ..Package::default()
        };
        let records = Records::default();
        let root = Root::host();
        let got = records.shared_objects(&root, &pkg).unwrap();
        assert_eq!(
            got.to_vec(),
            [
                "x/_c.cpython-311-x86_64-linux-gnu.so",
                "x.libs/libgomp-a34b3233.so.1.0.0"
            ]
        );
        // Cached: the file is gone, the answer stays.
        std::fs::remove_file(meta.join("RECORD")).unwrap();
        assert_eq!(records.shared_objects(&root, &pkg).unwrap().len(), 2);
        let other = Records::default();
        assert!(other.shared_objects(&root, &pkg).is_none());
    }
}
