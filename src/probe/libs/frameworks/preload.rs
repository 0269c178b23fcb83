//! A framework's own library loading from `sys.path`, emulated: torch (≥ 2.1) and the JAX CUDA
//! plugins load CUDA libraries *by path* with `ctypes` before their extension modules, from the
//! first `sys.path` entry that holds `nvidia/<lib>/lib/...`. Once loaded, every later request
//! for that soname (DT_NEEDED or `dlopen`) gets the loaded copy, whatever RPATH, RUNPATH or
//! LD_LIBRARY_PATH say. So a stray `nvidia/` directory in the working directory (`sys.path[0]`
//! of `python -c`, `-m`, a REPL, a script beside it) or in a PYTHONPATH entry wins over
//! site-packages, while an old copy on LD_LIBRARY_PATH loses to the preloaded one.
//!
//! The sys.path modelled is `[working directory] + pythons[].sys_path` (PYTHONPATH entries
//! come first there, as in Python). The working directory is `$PWD` of the probe (the
//! project directory when envdoctor runs in it).

use crate::root::Root;
use crate::snapshot::libs::FrameworkPreload;
use std::path::{Path, PathBuf};

/// One library the framework loads by path: the directories tried under each sys.path entry
/// (in order) and the file name or glob.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    /// Relative directories under a sys.path entry (`nvidia/cublas/lib`, `nvidia/cu13/lib`).
    pub dirs: Vec<String>,
    /// The file name, or a glob (`libcublasLt.so.*[0-9]`).
    pub pattern: String,
    /// JAX: the first entry holding the package directory (`dirs[0]` without its last
    /// component, `nvidia/cu13`) is used even when the file is missing there (then nothing is
    /// loaded). torch: the first entry where the glob matches.
    pub first_package_dir: bool,
    /// Where the rule was read (`torch/__init__.py _preload_cuda_deps`).
    pub evidence: String,
}

/// `fnmatch` for the globs these loaders use: `*`, `?`, `[0-9]`/`[abc]` classes.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    fn m(p: &[u8], n: &[u8]) -> bool {
        match p.first() {
            None => n.is_empty(),
            Some(b'*') => (0..=n.len()).any(|i| m(&p[1..], &n[i..])),
            Some(b'?') => !n.is_empty() && m(&p[1..], &n[1..]),
            Some(b'[') => {
                let Some(close) = p.iter().position(|c| *c == b']') else {
                    return !n.is_empty() && n[0] == b'[' && m(&p[1..], &n[1..]);
                };
                let Some(&c) = n.first() else {
                    return false;
                };
                let class = &p[1..close];
                let (neg, class) = match class.first() {
                    Some(b'!') => (true, &class[1..]),
                    _ => (false, class),
                };
                let mut hit = false;
                let mut i = 0;
                while i < class.len() {
                    if i + 2 < class.len() && class[i + 1] == b'-' {
                        hit |= class[i] <= c && c <= class[i + 2];
                        i += 3;
                    } else {
                        hit |= class[i] == c;
                        i += 1;
                    }
                }
                hit != neg && m(&p[close + 1..], &n[1..])
            }
            Some(&x) => n.first() == Some(&x) && m(&p[1..], &n[1..]),
        }
    }
    m(pattern.as_bytes(), name.as_bytes())
}

/// The files in `dir` matching `pattern`, sorted.
fn matches(root: &Root, dir: &Path, pattern: &str) -> Vec<PathBuf> {
    if !pattern.contains(['*', '?', '[']) {
        let p = dir.join(pattern);
        return if root.is_file(&p) {
            vec![p]
        } else {
            Vec::new()
        };
    }
    let mut v: Vec<PathBuf> = root
        .read_dir(dir)
        .unwrap_or_default()
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| glob_match(pattern, &n.to_string_lossy()))
                && root.is_file(p)
        })
        .collect();
    v.sort();
    v
}

/// Where each spec's library comes from for the given sys.path (`sys_path[0]` first). Specs
/// that find nothing are left out.
pub fn resolve(root: &Root, specs: &[Spec], sys_path: &[String]) -> Vec<FrameworkPreload> {
    let mut out = Vec::new();
    for spec in specs {
        'entries: for (i, entry) in sys_path.iter().enumerate() {
            let base = Path::new(entry);
            if spec.first_package_dir {
                let Some(pkg) = spec.dirs.first().map(|d| {
                    let d = Path::new(d);
                    base.join(d.parent().unwrap_or(d))
                }) else {
                    break;
                };
                if !root.is_dir(&pkg) {
                    continue;
                }
                if let Some(p) = matches(root, &base.join(&spec.dirs[0]), &spec.pattern)
                    .into_iter()
                    .next()
                {
                    out.push(record(root, spec, entry, i, p));
                }
                break 'entries;
            }
            for d in &spec.dirs {
                if let Some(p) = matches(root, &base.join(d), &spec.pattern)
                    .into_iter()
                    .next()
                {
                    out.push(record(root, spec, entry, i, p));
                    break 'entries;
                }
            }
        }
    }
    out
}

/// Mark the preloads found under another sys.path entry than `site` (the framework's own).
pub fn mark_foreign(preloads: &mut [FrameworkPreload], site: &Path) {
    for p in preloads {
        p.foreign = crate::root::lexical_normalize(Path::new(&p.sys_path_entry))
            != crate::root::lexical_normalize(site);
    }
}

fn record(root: &Root, spec: &Spec, entry: &str, index: usize, p: PathBuf) -> FrameworkPreload {
    let soname = crate::probe::libs::elf::read(root, &p)
        .ok()
        .and_then(|i| i.soname)
        .or_else(|| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    FrameworkPreload {
        soname,
        path: p.to_string_lossy().into_owned(),
        sys_path_entry: entry.to_string(),
        sys_path_index: index as u64,
        pattern: format!("{}/{}", spec.dirs.join("|"), spec.pattern),
        evidence: spec.evidence.clone(),
        foreign: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_as_fnmatch() {
        assert!(glob_match("libcublasLt.so.*[0-9]", "libcublasLt.so.13"));
        assert!(glob_match(
            "libnvrtc-builtins.so.*[0-9]",
            "libnvrtc-builtins.so.13.2"
        ));
        assert!(!glob_match("libcublas.so.*[0-9]", "libcublasLt.so.13"));
        assert!(!glob_match("libcudart.so.*[0-9]", "libcudart.so.13.bak"));
        assert!(glob_match("a?c[!x]", "abcd"));
        assert!(!glob_match("a?c[!x]", "abcx"));
    }

    #[test]
    fn first_sys_path_entry_wins_and_jax_stops_at_the_package() {
        let t = tempfile::tempdir().unwrap();
        let mk = |p: &str| {
            let f = t.path().join(p.trim_start_matches('/'));
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, b"x").unwrap();
        };
        mk("/cwd/nvidia/nvjitlink/lib/libnvJitLink.so.12");
        mk("/site/nvidia/nvjitlink/lib/libnvJitLink.so.12");
        mk("/site/nvidia/cu13/lib/libcudart.so.13");
        std::fs::create_dir_all(t.path().join("pp/nvidia/cu13")).unwrap();
        let root = Root::new(t.path());
        let torch = Spec {
            dirs: vec!["nvidia/nvjitlink/lib".into(), "nvidia/cu13/lib".into()],
            pattern: "libnvJitLink.so.*[0-9]".into(),
            first_package_dir: false,
            evidence: "t".into(),
        };
        let sp = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let r = resolve(&root, std::slice::from_ref(&torch), &sp(&["/cwd", "/site"]));
        assert_eq!(r[0].path, "/cwd/nvidia/nvjitlink/lib/libnvJitLink.so.12");
        assert_eq!(r[0].sys_path_index, 0);
        let r = resolve(&root, &[torch], &sp(&["/elsewhere", "/site"]));
        assert_eq!(r[0].path, "/site/nvidia/nvjitlink/lib/libnvJitLink.so.12");
        let jax = Spec {
            dirs: vec!["nvidia/cu13/lib".into()],
            pattern: "libcudart.so.13".into(),
            first_package_dir: true,
            evidence: "t".into(),
        };
        // An empty nvidia/cu13 package earlier on sys.path hides site-packages' copy.
        assert!(resolve(&root, std::slice::from_ref(&jax), &sp(&["/pp", "/site"])).is_empty());
        assert_eq!(
            resolve(&root, &[jax], &sp(&["/site"]))[0].path,
            "/site/nvidia/cu13/lib/libcudart.so.13"
        );
    }
}
