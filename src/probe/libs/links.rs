//! Symlink facts about a library file: the chain hop by hop, broken links and loops, the real
//! file, and whether a link's name claims another version than the file it leads to
//! (`libcupti.so.10.1 -> libcupti.so.10.2`, the field report that ended in a segfault).
//!
//! Versions are read from names after `.so.` (`libcudnn.so.8.9.2` → `8.9.2`). A hop is a
//! mismatch when both names carry a version, the link's is not a prefix of the target's
//! (`libfoo.so.12 -> libfoo.so.12.4.127` is fine), and the real file's DT_SONAME does not vouch
//! for the link's name: `libcudart.so.11.0 -> libcudart.so.11.1.74` and
//! `libcuda.so.1 -> libcuda.so.580.65.06` are how NVIDIA ships them (their sonames are
//! `libcudart.so.11.0` and `libcuda.so.1`), not mistakes.
//!
//! [`mixed_releases`] looks at one directory for one family shipped from two releases (cuDNN 8
//! sub-libraries `libcudnn_ops_infer.so.8.9.2` beside `libcudnn_cnn_infer.so.8.6.0`).

use crate::probe::libs::elf;
use crate::root::{Hop, Root, RootError};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What [`describe`] learns about one path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinkFacts {
    /// The path described (a machine path).
    pub path: PathBuf,
    /// Each link hop, in order (empty when `path` is the file itself).
    pub chain: Vec<Hop>,
    /// The real file, when every hop resolves.
    pub realpath: Option<PathBuf>,
    /// The chain ends at a missing file.
    pub broken: bool,
    /// The chain loops (or exceeds the kernel's 40 hops).
    pub is_loop: bool,
    /// Any other error reading the chain.
    pub error: Option<String>,
    /// The version `path`'s own name claims (`10.1`).
    pub name_version: Option<String>,
    /// The version the real file's name says (`10.2`).
    pub file_version: Option<String>,
    /// DT_SONAME of the real file, when it is readable ELF.
    pub soname: Option<String>,
    /// A hop whose link name claims another version than its target.
    pub version_mismatch: bool,
    /// The first mismatching hop (link name, target name).
    pub mismatch: Option<(String, String)>,
}

/// The version after `.so.` in a file name (`libcupti.so.10.1` → `10.1`), when it is dotted
/// digits.
pub fn name_version(name: &str) -> Option<String> {
    let (_, v) = name.rsplit_once(".so.")?;
    (!v.is_empty()
        && v.split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())))
    .then(|| v.to_string())
}

/// The name before `.so` (`libcupti.so.10.1` → `libcupti`).
pub fn stem(name: &str) -> &str {
    name.split_once(".so").map(|(s, _)| s).unwrap_or(name)
}

/// True when `claim`'s components are a prefix of `actual`'s (`12` vs `12.4.127`).
pub fn version_prefix_of(claim: &str, actual: &str) -> bool {
    let c: Vec<&str> = claim.split('.').collect();
    let a: Vec<&str> = actual.split('.').collect();
    c.len() <= a.len()
        && c.iter()
            .zip(&a)
            .all(|(x, y)| x.parse::<u64>().ok() == y.parse::<u64>().ok())
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Describe the symlink chain and versions of `path` (a machine path) inside `root`.
pub fn describe(root: &Root, path: &Path) -> LinkFacts {
    let mut f = LinkFacts {
        path: path.to_path_buf(),
        name_version: name_version(&file_name(path)),
        ..Default::default()
    };
    match root.symlink_chain(path) {
        Ok(chain) => f.chain = chain,
        Err(RootError::Loop { .. }) => {
            f.is_loop = true;
            return f;
        }
        Err(e) if e.is_not_found() => {
            f.broken = true;
            return f;
        }
        Err(e) => {
            f.error = Some(e.to_string());
            return f;
        }
    }
    match root.canonicalize(path) {
        Ok(real) => {
            f.file_version = name_version(&file_name(&real));
            f.soname = elf::read(root, &real).ok().and_then(|i| i.soname);
            f.realpath = Some(real);
        }
        Err(RootError::Loop { .. }) => f.is_loop = true,
        Err(e) if e.is_not_found() => f.broken = true,
        Err(e) => f.error = Some(e.to_string()),
    }
    // Each hop: the link's name against its target's name.
    for hop in &f.chain {
        let link = file_name(&hop.link);
        let target = file_name(&hop.target);
        let (Some(lv), Some(tv)) = (name_version(&link), name_version(&target)) else {
            continue;
        };
        if version_prefix_of(&lv, &tv) {
            continue;
        }
        if f.soname.as_deref() == Some(link.as_str()) {
            continue; // the real file says it is what the link claims
        }
        f.version_mismatch = true;
        f.mismatch = Some((link, target));
        break;
    }
    f
}

/// One family found in two or more releases in one directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MixedRelease {
    /// The directory.
    pub dir: PathBuf,
    /// The family (`cudnn`: the stem up to its first `_`, without `lib`).
    pub family: String,
    /// Version → the regular files carrying it.
    pub versions: BTreeMap<String, Vec<PathBuf>>,
}

/// Families whose regular library files in `dir` carry different full versions (symlinks are
/// ignored: the files themselves say which release they came from). Only versions with at least
/// two components count (`libcudnn.so.8` is a link name, not a release).
pub fn mixed_releases(root: &Root, dir: &Path) -> Vec<MixedRelease> {
    let mut families: BTreeMap<String, BTreeMap<String, Vec<PathBuf>>> = BTreeMap::new();
    for p in root.read_dir(dir).unwrap_or_default() {
        let name = file_name(&p);
        let Some(v) = name_version(&name) else {
            continue;
        };
        if !v.contains('.') {
            continue;
        }
        let is_regular = root
            .symlink_metadata(&p)
            .map(|m| m.file_type().is_file())
            .unwrap_or(false);
        if !is_regular {
            continue;
        }
        let s = stem(&name);
        let s = s.strip_prefix("lib").unwrap_or(s);
        let family = s.split('_').next().unwrap_or(s).to_string();
        families
            .entry(family)
            .or_default()
            .entry(v)
            .or_default()
            .push(p);
    }
    families
        .into_iter()
        .filter(|(_, vs)| vs.len() > 1)
        .map(|(family, versions)| MixedRelease {
            dir: dir.to_path_buf(),
            family,
            versions,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn versions_from_names() {
        assert_eq!(name_version("libcupti.so.10.1").as_deref(), Some("10.1"));
        assert_eq!(name_version("libcudnn.so.8.9.2").as_deref(), Some("8.9.2"));
        assert_eq!(name_version("libcudnn.so"), None);
        assert_eq!(name_version("libfoo.so.1a"), None);
        assert!(version_prefix_of("12", "12.4.127"));
        assert!(!version_prefix_of("10.1", "10.2"));
        assert!(!version_prefix_of("11.0", "12"));
        assert_eq!(stem("libcudnn_ops_infer.so.8.9.2"), "libcudnn_ops_infer");
    }

    #[test]
    fn chain_mismatch_broken_and_loop() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        std::fs::write(d.join("libcupti.so.10.2"), b"not elf").unwrap();
        symlink("libcupti.so.10.2", d.join("libcupti.so.10.1")).unwrap();
        symlink("libcupti.so.10.1", d.join("libcupti.so")).unwrap();
        std::fs::write(d.join("libfoo.so.12.4.127"), b"x").unwrap();
        symlink("libfoo.so.12.4.127", d.join("libfoo.so.12")).unwrap();
        symlink("libgone.so.1.0", d.join("libgone.so.1")).unwrap();
        symlink("liba.so.1", d.join("libb.so.1")).unwrap();
        symlink("libb.so.1", d.join("liba.so.1")).unwrap();
        let root = Root::new(d);

        let f = describe(&root, Path::new("/libcupti.so"));
        assert_eq!(f.chain.len(), 2);
        assert_eq!(f.realpath.as_deref(), Some(Path::new("/libcupti.so.10.2")));
        assert!(f.version_mismatch);
        assert_eq!(
            f.mismatch,
            Some(("libcupti.so.10.1".into(), "libcupti.so.10.2".into()))
        );
        assert_eq!(f.name_version, None);
        assert_eq!(f.file_version.as_deref(), Some("10.2"));

        let f = describe(&root, Path::new("/libfoo.so.12"));
        assert!(!f.version_mismatch);
        assert_eq!(f.name_version.as_deref(), Some("12"));

        let f = describe(&root, Path::new("/libgone.so.1"));
        assert!(f.broken && f.realpath.is_none());
        let f = describe(&root, Path::new("/liba.so.1"));
        assert!(f.is_loop);
    }

    #[test]
    fn mixed_cudnn_releases_in_one_dir() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        for n in [
            "libcudnn.so.8.9.2",
            "libcudnn_ops_infer.so.8.9.2",
            "libcudnn_cnn_infer.so.8.6.0",
            "libcublas.so.12.1.3.1",
        ] {
            std::fs::write(d.join(n), b"x").unwrap();
        }
        symlink(
            "libcudnn_cnn_infer.so.8.6.0",
            d.join("libcudnn_cnn_infer.so.8"),
        )
        .unwrap();
        let m = mixed_releases(&Root::new(d), Path::new("/"));
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].family, "cudnn");
        assert_eq!(
            m[0].versions.keys().collect::<Vec<_>>(),
            vec!["8.6.0", "8.9.2"]
        );
    }
}
