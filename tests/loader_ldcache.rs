//! `ldcache::parse` against real caches written by `ldconfig`, checked against `ldconfig -p`;
//! staleness; and, where this process may `chroot`, the whole search inside a fake root
//! compared with the real loader running in that root.

use crate::common::cc;

use envdoctor::probe::libs::ldcache::{self, CacheFormat, LdCache};
use envdoctor::probe::libs::search::{FoundVia, Loader, Object, Requester};
use envdoctor::root::{Env, Root};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn ldconfig() -> Option<PathBuf> {
    ["/sbin/ldconfig", "/usr/sbin/ldconfig"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

/// `(key, flags label, hwcap, value)` lines of `ldconfig -p -C cache`.
fn ldconfig_p(ldconfig: &Path, cache: &Path) -> BTreeSet<(String, String, Option<String>, String)> {
    let out = cc::run(Command::new(ldconfig).arg("-p").arg("-C").arg(cache));
    let text = String::from_utf8_lossy(&out.stdout);
    let mut set = BTreeSet::new();
    for line in text.lines().filter(|l| l.starts_with('\t')) {
        let (left, value) = line.trim().split_once(" => ").unwrap();
        let (key, rest) = left.split_once(" (").unwrap();
        let inner = rest.trim_end_matches(')');
        let (flags, hwcap) = match inner.split_once(", hwcap: ") {
            Some((f, h)) => (f.to_string(), Some(h.trim_matches('"').to_string())),
            None => (inner.to_string(), None),
        };
        set.insert((key.to_string(), flags, hwcap, value.to_string()));
    }
    set
}

fn libs_tree(top: &Path) -> PathBuf {
    let lib = top.join("lib");
    cc::Lib::new("libedc.so.1").build(&lib.join("libedc.so.1.2.3"));
    cc::symlink("libedc.so.1.2.3", lib.join("libedc.so.1"));
    cc::Lib::new("libedc.so.1").build(&lib.join("glibc-hwcaps/x86-64-v2/libedc.so.1"));
    cc::Lib::new("libedd.so.7").build(&lib.join("libedd.so.7"));
    lib
}

#[test]
fn parse_agrees_with_ldconfig_p_for_new_and_compat_caches() {
    let Some(ldc) = ldconfig() else {
        eprintln!("skipped: no ldconfig");
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let top = t.path().canonicalize().unwrap();
    let lib = libs_tree(&top);
    let conf = top.join("ld.so.conf");
    std::fs::write(&conf, format!("{}\n", lib.display())).unwrap();
    for (fmt, expect) in [("new", CacheFormat::New), ("compat", CacheFormat::OldNew)] {
        let cache = top.join(format!("cache.{fmt}"));
        cc::run(
            Command::new(&ldc)
                .args(["-X", "-c", fmt, "-C"])
                .arg(&cache)
                .arg("-f")
                .arg(&conf),
        );
        let parsed = ldcache::parse(&std::fs::read(&cache).unwrap()).unwrap();
        assert_eq!(parsed.format, Some(expect));
        let theirs = ldconfig_p(&ldc, &cache);
        let ours: BTreeSet<_> = parsed
            .entries
            .iter()
            .map(|e| {
                (
                    e.key.clone(),
                    e.flags_label(),
                    e.hwcaps.clone(),
                    e.value.clone(),
                )
            })
            .collect();
        if fmt == "new" {
            assert_eq!(ours, theirs);
        } else {
            // glibc 2.36's `ldconfig -p` prints a garbage hwcap name for compat caches;
            // compare everything else.
            let strip = |s: &BTreeSet<(String, String, Option<String>, String)>| {
                s.iter()
                    .map(|(k, f, h, v)| (k.clone(), f.clone(), h.is_some(), v.clone()))
                    .collect::<BTreeSet<_>>()
            };
            assert_eq!(strip(&ours), strip(&theirs));
        }
        // Our own library is there, with its hwcaps twin.
        let hw = parsed
            .lookup("libedc.so.1", &["x86-64-v3", "x86-64-v2"])
            .unwrap();
        assert_eq!(hw.hwcaps.as_deref(), Some("x86-64-v2"));
        assert_eq!(
            Path::new(&hw.value),
            lib.join("glibc-hwcaps/x86-64-v2/libedc.so.1")
        );
        let plain = parsed.lookup("libedc.so.1", &[]).unwrap();
        assert_eq!(Path::new(&plain.value), lib.join("libedc.so.1"));
    }
}

#[test]
fn a_library_added_after_ldconfig_makes_the_cache_stale() {
    let Some(ldc) = ldconfig() else {
        eprintln!("skipped: no ldconfig");
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let top = t.path().canonicalize().unwrap();
    let lib = libs_tree(&top);
    // ld.so.conf with an include glob, as Debian ships it.
    std::fs::create_dir_all(top.join("conf.d")).unwrap();
    let conf = top.join("ld.so.conf");
    std::fs::write(&conf, "include conf.d/*.conf\n").unwrap();
    std::fs::write(
        top.join("conf.d/ed.conf"),
        format!("# ours\n{}\n", lib.display()),
    )
    .unwrap();
    let cache = top.join("ld.so.cache");
    cc::run(
        Command::new(&ldc)
            .args(["-X", "-C"])
            .arg(&cache)
            .arg("-f")
            .arg(&conf),
    );
    let root = Root::host();
    let (dirs, errors) = ldcache::conf_dirs(&root, &conf);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(dirs, vec![lib.clone()]);
    let parsed = LdCache::load(&root, &cache).unwrap();
    assert_eq!(
        ldcache::stale_files(&root, &parsed, &dirs),
        Vec::<PathBuf>::new()
    );
    cc::Lib::new("libednew.so.3").build(&lib.join("libednew.so.3.0.1"));
    assert_eq!(
        ldcache::stale_files(&root, &parsed, &dirs),
        vec![lib.join("libednew.so.3.0.1")]
    );
    // After ldconfig runs again the cache lists it.
    cc::run(
        Command::new(&ldc)
            .args(["-X", "-C"])
            .arg(&cache)
            .arg("-f")
            .arg(&conf),
    );
    let parsed = LdCache::load(&root, &cache).unwrap();
    assert!(ldcache::stale_files(&root, &parsed, &dirs).is_empty());
}

/// A whole machine in a temp dir: its own ld.so, libc, ld.so.conf and cache (`ldconfig -r`).
/// envdoctor resolves with `--root` semantics; the real loader runs chrooted into the same
/// tree. Needs the right to `chroot` (root in CI containers); skipped otherwise.
#[test]
fn chrooted_real_loader_agrees_with_root_emulation() {
    let Some(ldc) = ldconfig() else {
        eprintln!("skipped: no ldconfig");
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let r = t.path().canonicalize().unwrap();
    let copy = |from: &str, to: &str| {
        let dst = r.join(to.trim_start_matches('/'));
        std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
        std::fs::copy(Path::new(from).canonicalize().unwrap(), &dst).unwrap();
    };
    copy("/lib64/ld-linux-x86-64.so.2", "/lib64/ld-linux-x86-64.so.2");
    copy(
        "/lib/x86_64-linux-gnu/libc.so.6",
        "/lib/x86_64-linux-gnu/libc.so.6",
    );
    cc::Exe::dlopener().build(&r.join("bin/app"));
    // Cached: /opt/cuda/lib64 (listed in ld.so.conf), with an hwcaps twin.
    cc::Lib::new("libedcuda.so.1").build(&r.join("opt/cuda/lib64/libedcuda.so.1"));
    cc::Lib::new("libedcuda.so.1")
        .build(&r.join("opt/cuda/lib64/glibc-hwcaps/x86-64-v2/libedcuda.so.1"));
    cc::Lib::new("libedgone.so.2").build(&r.join("opt/cuda/lib64/libedgone.so.2"));
    std::fs::create_dir_all(r.join("etc")).unwrap();
    std::fs::write(r.join("etc/ld.so.conf"), "/opt/cuda/lib64\n").unwrap();
    let status = Command::new(&ldc).arg("-r").arg(&r).status().unwrap();
    assert!(status.success());
    // After the cache was written: a library only in a default dir, one removed (the cache
    // entry now points nowhere) but present in a default dir.
    cc::Lib::new("libeddef.so.1").build(&r.join("usr/lib/x86_64-linux-gnu/libeddef.so.1"));
    std::fs::remove_file(r.join("opt/cuda/lib64/libedgone.so.2")).unwrap();
    cc::Lib::new("libedgone.so.2").build(&r.join("usr/lib/libedgone.so.2"));

    let chroot = ["/usr/sbin/chroot", "/sbin/chroot", "/usr/bin/chroot"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .unwrap_or_else(|| PathBuf::from("chroot"));
    let probe = Command::new(&chroot).arg(&r).arg("/bin/app").output();
    if !matches!(&probe, Ok(o) if o.status.success()) {
        eprintln!("skipped: cannot chroot here ({probe:?})");
        return;
    }
    let root = Root::new(&r);
    let loader = Loader::new(&root, &Env::default());
    assert!(loader.cache().is_some(), "{:?}", loader.cache_error());
    let app = Requester::new(
        Object::read(&root, Path::new("/bin/app"))
            .unwrap()
            .main_executable(),
    );
    let mut vias = Vec::new();
    for name in [
        "libedcuda.so.1",
        "libeddef.so.1",
        "libedgone.so.2",
        "libedmissing.so.9",
    ] {
        let out = Command::new(&chroot)
            .arg(&r)
            .args(["/bin/app", name])
            .env_clear()
            .env("LD_DEBUG", "libs")
            .output()
            .unwrap();
        let dbg = cc::LdDebug {
            log: String::from_utf8_lossy(&out.stderr).into_owned(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        };
        let ours = loader.resolve(name, &app);
        assert_eq!(ours.path, dbg.picked(name), "{name}: {ours:?}\n{}", dbg.log);
        vias.push(ours.label());
    }
    let hw = if loader.hwcaps().is_empty() {
        "ld-so-cache"
    } else {
        "hwcaps"
    };
    assert_eq!(
        vias,
        vec![Some(hw), Some("default-dirs"), Some("default-dirs"), None]
    );
    let _ = FoundVia::LdSoCache;
    // And the stale check sees nothing missing (the new library is in a trusted dir that
    // ldconfig -r also scanned before it existed: it IS stale).
    let cache = loader.cache().unwrap();
    let mut dirs = ldcache::conf_dirs(&root, Path::new("/etc/ld.so.conf")).0;
    dirs.extend(ldcache::trusted_dirs(&root));
    let stale = ldcache::stale_files(&root, cache, &dirs);
    assert!(
        stale.contains(&PathBuf::from("/usr/lib/x86_64-linux-gnu/libeddef.so.1")),
        "{stale:?}"
    );
}

/// The machine's own cache, whatever ldconfig wrote it, reads the same as `ldconfig -p`.
#[test]
fn host_cache_agrees_with_ldconfig_p() {
    let Some(ldc) = ldconfig() else {
        eprintln!("skipped: no ldconfig");
        return;
    };
    let Ok(bytes) = std::fs::read("/etc/ld.so.cache") else {
        eprintln!("skipped: no /etc/ld.so.cache");
        return;
    };
    let parsed = ldcache::parse(&bytes).unwrap();
    let theirs = ldconfig_p(&ldc, Path::new("/etc/ld.so.cache"));
    let ours: BTreeSet<_> = parsed
        .entries
        .iter()
        .map(|e| {
            (
                e.key.clone(),
                e.flags_label(),
                e.hwcaps.clone(),
                e.value.clone(),
            )
        })
        .collect();
    if parsed.format == Some(CacheFormat::New) {
        assert_eq!(ours, theirs);
    } else {
        assert_eq!(ours.len(), theirs.len());
    }
}
