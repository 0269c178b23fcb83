//! envdoctor's loader emulation against the real glibc loader: every case compiles real
//! libraries with `cc`, asks the real `ld.so` (an executable that `dlopen`s, run under
//! `LD_DEBUG=libs`) which file it opened, and asserts `Loader::resolve` names the same path.

use crate::common::cc;

use envdoctor::probe::libs::search::{FoundVia, Loader, Object, Requester};
use envdoctor::root::{Env, Root};
use std::path::{Path, PathBuf};

struct Case {
    _dir: tempfile::TempDir,
    top: PathBuf,
    exe: PathBuf,
}

fn case(exe: cc::Exe) -> Case {
    let dir = tempfile::tempdir().unwrap();
    // Canonical, so the paths we build are spelled as the loader spells them.
    let top = dir.path().canonicalize().unwrap();
    let exe = exe.build(&top.join("bin/app"));
    Case {
        _dir: dir,
        top,
        exe,
    }
}

fn env(llp: Option<&str>) -> Env {
    match llp {
        Some(v) => Env::from_pairs([("LD_LIBRARY_PATH", v)]),
        None => Env::default(),
    }
}

fn app(c: &Case) -> Requester {
    let root = Root::host();
    Requester::new(Object::read(&root, &c.exe).unwrap().main_executable())
}

/// Run the real loader: the executable dlopens `first`; return what it picked for `name`.
fn real(c: &Case, first: &str, name: &str, llp: Option<&str>) -> (Option<PathBuf>, String) {
    let envs: Vec<(&str, &str)> = llp
        .map(|v| vec![("LD_LIBRARY_PATH", v)])
        .unwrap_or_default();
    let dbg = cc::ld_debug(&c.exe, &[first], &envs, None);
    if std::env::var_os("SHOW_LD_DEBUG").is_some() {
        eprintln!("{}", dbg.log);
    }
    (dbg.picked(name), dbg.stdout)
}

#[test]
fn ld_library_path_beats_runpath_and_rpath_beats_ld_library_path() {
    // RUNPATH executable: LD_LIBRARY_PATH is searched first.
    let c = case(cc::Exe::dlopener().runpath("/placeholder"));
    let a = c.top.join("a");
    let b = c.top.join("b");
    cc::Lib::new("libedone.so")
        .returns("which", 1)
        .build(&a.join("libedone.so"));
    cc::Lib::new("libedone.so")
        .returns("which", 2)
        .build(&b.join("libedone.so"));
    // Rebuild the exe with RUNPATH = a.
    let exe = cc::Exe::dlopener()
        .runpath(a.to_str().unwrap())
        .build(&c.exe);
    let c = Case { exe, ..c };
    let llp = b.to_str().unwrap();
    let loader = Loader::new(&Root::host(), &env(Some(llp)));
    let ours = loader.resolve("libedone.so", &app(&c));
    let (theirs, _) = real(&c, "libedone.so", "libedone.so", Some(llp));
    assert_eq!(ours.path, theirs, "{ours:?}");
    assert_eq!(ours.path, Some(b.join("libedone.so")));
    assert_eq!(ours.found_via, Some(FoundVia::LdLibraryPath));
    // Without LD_LIBRARY_PATH, RUNPATH finds it.
    let loader = Loader::new(&Root::host(), &env(None));
    let ours = loader.resolve("libedone.so", &app(&c));
    let (theirs, _) = real(&c, "libedone.so", "libedone.so", None);
    assert_eq!(ours.path, theirs);
    assert_eq!(ours.found_via, Some(FoundVia::Runpath));

    // RPATH executable: RPATH is searched before LD_LIBRARY_PATH.
    let exe = cc::Exe::dlopener().rpath(a.to_str().unwrap()).build(&c.exe);
    let c = Case { exe, ..c };
    let loader = Loader::new(&Root::host(), &env(Some(llp)));
    let ours = loader.resolve("libedone.so", &app(&c));
    let (theirs, _) = real(&c, "libedone.so", "libedone.so", Some(llp));
    assert_eq!(ours.path, theirs);
    assert_eq!(ours.path, Some(a.join("libedone.so")));
    assert_eq!(ours.found_via, Some(FoundVia::Rpath));
}

/// exe (RPATH=deps) dlopens libA, whose DT_NEEDED libB lives only in deps: libA has no search
/// path of its own, so libB comes from the executable's RPATH (inherited down the chain). If
/// libA has a DT_RUNPATH, the RPATH chain is not consulted at all and libB is not found; and an
/// executable's DT_RUNPATH is never inherited.
#[test]
fn rpath_is_inherited_and_runpath_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let top = dir.path().canonicalize().unwrap();
    let deps = top.join("deps");
    let libs = top.join("libs");
    let empty = top.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    cc::Lib::new("libedB.so")
        .returns("b", 2)
        .build(&deps.join("libedB.so"));
    let deps_s = deps.to_str().unwrap().to_string();
    let libs_s = libs.to_str().unwrap().to_string();
    let runs = [
        // (exe rpath?, exe runpath?, libA runpath?, expect libB found)
        (true, false, false, true),
        (false, true, false, false),
        (true, false, true, false),
    ];
    for (i, (exe_rpath, exe_runpath, a_runpath, expect)) in runs.into_iter().enumerate() {
        let sub = top.join(format!("run{i}"));
        let mut a = cc::Lib::new("libedA.so")
            .returns("a", 1)
            .needs(&deps, "edB");
        if a_runpath {
            a = a.runpath(empty.to_str().unwrap());
        }
        let a_path = a.build(&sub.join("libs/libedA.so"));
        let mut exe = cc::Exe::dlopener();
        let search = format!("{deps_s}:{}", sub.join("libs").display());
        if exe_rpath {
            exe = exe.rpath(&search);
        }
        if exe_runpath {
            exe = exe.runpath(&search);
        }
        let exe = exe.build(&sub.join("bin/app"));
        let c = Case {
            _dir: tempfile::tempdir().unwrap(),
            top: sub.clone(),
            exe,
        };
        let root = Root::host();
        let loader = Loader::new(&root, &env(None));
        let req = app(&c);
        let ra = loader.resolve("libedA.so", &req);
        assert_eq!(
            ra.path.as_deref(),
            Some(a_path.as_path()),
            "run {i}: {ra:?}"
        );
        let child = req.child(Object::read(&root, ra.path.as_ref().unwrap()).unwrap());
        let rb = loader.resolve("libedB.so", &child);
        let (theirs, stdout) = real(&c, "libedA.so", "libedB.so", None);
        assert_eq!(
            rb.path, theirs,
            "run {i}: ours {rb:?}\nreal stdout {stdout}"
        );
        assert_eq!(rb.path.is_some(), expect, "run {i}");
        assert_eq!(stdout.starts_with("ok"), expect, "run {i}: {stdout}");
        if expect {
            assert_eq!(rb.found_via, Some(FoundVia::Rpath));
        }
        let _ = &libs_s;
    }
}

/// `$ORIGIN` is the directory of the requester *as opened*: libA reached through a symlinked
/// directory finds `$ORIGIN/../deps` relative to the link, resolved by the kernel.
#[test]
fn origin_is_the_directory_as_opened() {
    let dir = tempfile::tempdir().unwrap();
    let top = dir.path().canonicalize().unwrap();
    cc::Lib::new("libedB.so")
        .returns("b", 1)
        .build(&top.join("real/deps/libedB.so"));
    // Link-time copy so -ledB resolves.
    let a = cc::Lib::new("libedA.so")
        .rpath("$ORIGIN/../deps")
        .needs(&top.join("real/deps"), "edB")
        .build(&top.join("real/lib/libedA.so"));
    assert!(a.exists());
    cc::symlink(top.join("real/lib"), top.join("view/lib"));
    // view/lib/.. is real/ (the kernel follows the link before ..), so deps is real/deps.
    let c = case(cc::Exe::dlopener());
    let llp = top.join("view/lib");
    let llp = llp.to_str().unwrap();
    let root = Root::host();
    let loader = Loader::new(&root, &env(Some(llp)));
    let req = app(&c);
    let ra = loader.resolve("libedA.so", &req);
    let (theirs_a, _) = real(&c, "libedA.so", "libedA.so", Some(llp));
    assert_eq!(ra.path, theirs_a);
    assert_eq!(ra.path, Some(top.join("view/lib/libedA.so")));
    let child = req.child(Object::read(&root, ra.path.as_ref().unwrap()).unwrap());
    let rb = loader.resolve("libedB.so", &child);
    let (theirs_b, out) = real(&c, "libedA.so", "libedB.so", Some(llp));
    assert_eq!(rb.path, theirs_b, "{out}");
    assert_eq!(rb.path, Some(top.join("view/lib/../deps/libedB.so")));
}

/// `$LIB` and `$PLATFORM` expand as the real loader expands them.
#[test]
fn lib_and_platform_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let top = dir.path().canonicalize().unwrap();
    let root = Root::host();
    let loader = Loader::new(&root, &env(None));
    for (token, name) in [("$LIB", "libedlib.so"), ("${PLATFORM}", "libedplat.so")] {
        let sub = top.join(name.trim_end_matches(".so"));
        let target_dir = sub.join("bin").join(
            loader
                .expand(token, None)
                .unwrap()
                .strip_prefix("/")
                .unwrap(),
        );
        cc::Lib::new(name).build(&target_dir.join(name));
        let c = Case {
            _dir: tempfile::tempdir().unwrap(),
            top: sub.clone(),
            exe: cc::Exe::dlopener()
                .rpath(&format!("$ORIGIN/{token}"))
                .build(&sub.join("bin/app")),
        };
        let ours = loader.resolve(name, &app(&c));
        let (theirs, out) = real(&c, name, name, None);
        assert_eq!(ours.path, theirs, "{token}: {out}");
        assert!(ours.path.is_some(), "{token}: {ours:?}");
    }
}

/// A `glibc-hwcaps/<level>` copy wins over the plain one in the same directory.
#[test]
fn hwcaps_subdirectory_wins() {
    let root = Root::host();
    let probe = Loader::new(&root, &env(None));
    let Some(level) = probe.hwcaps().last().copied() else {
        eprintln!("skipped: this CPU supports no x86-64-v2 level");
        return;
    };
    let c = case(cc::Exe::dlopener());
    let d = c.top.join("lib");
    cc::Lib::new("libedhw.so").build(&d.join("libedhw.so"));
    cc::Lib::new("libedhw.so").build(&d.join("glibc-hwcaps").join(level).join("libedhw.so"));
    let llp = d.to_str().unwrap();
    let loader = Loader::new(&root, &env(Some(llp)));
    let ours = loader.resolve("libedhw.so", &app(&c));
    let (theirs, _) = real(&c, "libedhw.so", "libedhw.so", Some(llp));
    assert_eq!(ours.path, theirs);
    assert_eq!(ours.hwcaps.as_deref(), Some(level));
    assert_eq!(ours.label(), Some("hwcaps"));
}

/// A foreign-machine ELF is skipped and the search goes on; a non-ELF file stops it.
#[test]
fn wrong_machine_is_skipped_and_non_elf_is_fatal() {
    let c = case(cc::Exe::dlopener());
    let arm = c.top.join("arm");
    let good = c.top.join("good");
    let text = c.top.join("text");
    cc::Lib::new("libedm.so").build(&good.join("libedm.so"));
    let p = cc::Lib::new("libedm.so").build(&arm.join("libedm.so"));
    let mut bytes = std::fs::read(&p).unwrap();
    bytes[18] = 183; // EM_AARCH64
    bytes[19] = 0;
    std::fs::write(&p, bytes).unwrap();
    std::fs::create_dir_all(&text).unwrap();
    // A linker script long enough to hold an ELF header: `invalid ELF header`.
    std::fs::write(text.join("libedm.so"), "/* GNU ld script */\n".repeat(8)).unwrap();
    // A short one: `file too short`.
    let short = c.top.join("short");
    std::fs::create_dir_all(&short).unwrap();
    std::fs::write(short.join("libedm.so"), "INPUT(-lc)\n").unwrap();

    let root = Root::host();
    let llp = format!("{}:{}", arm.display(), good.display());
    let loader = Loader::new(&root, &env(Some(&llp)));
    let ours = loader.resolve("libedm.so", &app(&c));
    let (theirs, out) = real(&c, "libedm.so", "libedm.so", Some(&llp));
    assert_eq!(ours.path, theirs, "{out}");
    assert_eq!(ours.path, Some(good.join("libedm.so")));
    assert_eq!(ours.skipped.len(), 1);

    let llp = format!("{}:{}", text.display(), good.display());
    let loader = Loader::new(&root, &env(Some(&llp)));
    let ours = loader.resolve("libedm.so", &app(&c));
    let (theirs, out) = real(&c, "libedm.so", "libedm.so", Some(&llp));
    assert!(out.starts_with("fail"), "{out}");
    assert_eq!(theirs, None);
    assert!(!ours.resolves());
    let err = ours.error.as_deref().unwrap();
    assert!(err.contains("invalid ELF header"), "{err}");
    // dlerror says the same words.
    assert!(out.contains("invalid ELF header"), "{out}");

    let llp = format!("{}:{}", short.display(), good.display());
    let loader = Loader::new(&root, &env(Some(&llp)));
    let ours = loader.resolve("libedm.so", &app(&c));
    let (_, out) = real(&c, "libedm.so", "libedm.so", Some(&llp));
    assert!(out.contains("file too short"), "{out}");
    assert!(ours.error.as_deref().unwrap().contains("file too short"));
}

/// Names from the host's own `/etc/ld.so.cache`: the cache lookup agrees with the real loader.
#[test]
fn host_cache_lookups_agree() {
    let root = Root::host();
    let loader = Loader::new(&root, &env(None));
    if loader.cache().is_none() {
        eprintln!("skipped: no readable /etc/ld.so.cache");
        return;
    }
    let c = case(cc::Exe::dlopener());
    let mut checked = 0;
    for name in [
        "libm.so.6",
        "libz.so.1",
        "libstdc++.so.6",
        "libgcc_s.so.1",
        "libexpat.so.1",
    ] {
        let ours = loader.resolve(name, &app(&c));
        let (theirs, out) = real(&c, name, name, None);
        if theirs.is_none() && !out.starts_with("fail") {
            continue; // already loaded: the loader did not search
        }
        assert_eq!(ours.path, theirs, "{name}: {out}");
        if ours.path.is_some() {
            assert_eq!(ours.found_via, Some(FoundVia::LdSoCache), "{name}");
            checked += 1;
        }
    }
    assert!(checked > 0, "no library of the list was searched for");
}

/// A name with a slash is a path: no search at all.
#[test]
fn slash_names_are_paths() {
    let c = case(cc::Exe::dlopener());
    let p = cc::Lib::new("libedp.so").build(&c.top.join("x/libedp.so"));
    let loader = Loader::new(&Root::host(), &env(None));
    let name = p.to_str().unwrap();
    let ours = loader.resolve(name, &app(&c));
    let (theirs, _) = real(&c, name, name, None);
    assert_eq!(ours.found_via, Some(FoundVia::Path));
    assert_eq!(ours.path.as_deref(), Some(Path::new(name)));
    // ld.so prints no `trying file=` for a path; confirm it loaded.
    let _ = theirs;
    let out = cc::ld_debug(&c.exe, &[name], &[], None).stdout;
    assert!(out.starts_with("ok"), "{out}");
}

/// Legacy hwcaps subdirectories (`tls/`, glibc < 2.37) are searched exactly when the real
/// loader searches them; whatever this host's glibc, both must pick the same file.
#[test]
fn legacy_tls_subdirectory_agrees() {
    let c = case(cc::Exe::dlopener());
    let d = c.top.join("lib");
    cc::Lib::new("libedtls.so").build(&d.join("libedtls.so"));
    cc::Lib::new("libedtls.so").build(&d.join("tls/libedtls.so"));
    let llp = d.to_str().unwrap();
    let loader = Loader::new(&Root::host(), &env(Some(llp)));
    let ours = loader.resolve("libedtls.so", &app(&c));
    let (theirs, out) = real(&c, "libedtls.so", "libedtls.so", Some(llp));
    assert_eq!(ours.path, theirs, "glibc {:?}: {out}", loader.glibc());
    if loader.glibc().is_some_and(|v| v < (2, 37)) {
        assert_eq!(ours.path, Some(d.join("tls/libedtls.so")));
    }
}

/// A library preloaded with LD_PRELOAD is reused for a later request of its soname: no search,
/// so a different copy on LD_LIBRARY_PATH is never opened.
#[test]
fn preloaded_soname_is_reused() {
    let c = case(cc::Exe::dlopener());
    let pre = cc::Lib::new("libedpre.so.1").build(&c.top.join("pre/libedpre-custom.so"));
    let other = c.top.join("other");
    cc::Lib::new("libedpre.so.1").build(&other.join("libedpre.so.1"));
    let llp = other.to_str().unwrap();
    let env = Env::from_pairs([
        ("LD_LIBRARY_PATH", llp),
        ("LD_PRELOAD", pre.to_str().unwrap()),
    ]);
    let loader = Loader::new(&Root::host(), &env);
    let ours = loader.resolve("libedpre.so.1", &app(&c));
    assert_eq!(ours.path.as_deref(), Some(pre.as_path()));
    assert_eq!(ours.found_via, Some(FoundVia::Preload));
    let dbg = cc::ld_debug(
        &c.exe,
        &["libedpre.so.1"],
        &[
            ("LD_LIBRARY_PATH", llp),
            ("LD_PRELOAD", pre.to_str().unwrap()),
        ],
        None,
    );
    assert!(dbg.stdout.starts_with("ok"), "{}", dbg.stdout);
    assert!(
        dbg.log
            .contains(&format!("calling init: {}", pre.display())),
        "{}",
        dbg.log
    );
    assert!(
        !dbg.log.contains("find library=libedpre.so.1"),
        "{}",
        dbg.log
    );
    assert!(!dbg
        .log
        .contains(&other.join("libedpre.so.1").display().to_string()));
}

/// `-z nodefaultlib` (DF_1_NODEFLIB) on the requester: cache entries under the default dirs and
/// the default dirs themselves are skipped for its dependencies.
#[test]
fn nodeflib_skips_system_cache_entries_and_default_dirs() {
    let root = Root::host();
    let loader = Loader::new(&root, &env(None));
    let Some(cache) = loader.cache() else {
        eprintln!("skipped: no readable /etc/ld.so.cache");
        return;
    };
    let Some(dep) = ["libz.so.1", "libexpat.so.1", "libgcc_s.so.1"]
        .into_iter()
        .find(|n| cache.lookup(n, loader.hwcaps()).is_some())
    else {
        eprintln!("skipped: none of the probe libraries is cached here");
        return;
    };
    let c = case(cc::Exe::dlopener());
    let mut results = Vec::new();
    for nodeflib in [false, true] {
        let mut lib =
            cc::Lib::new("libednodef.so").needs(Path::new("/nonexistent"), &format!(":{dep}"));
        if nodeflib {
            lib = lib.arg("-Wl,-z,nodefaultlib");
        }
        let p = lib.build(&c.top.join(format!("nd{nodeflib}/libednodef.so")));
        let req = app(&c).child(Object::read(&root, &p).unwrap());
        assert_eq!(req.object.nodeflib, nodeflib);
        let ours = loader.resolve(dep, &req);
        let dbg = cc::ld_debug(&c.exe, &[p.to_str().unwrap()], &[], None);
        let loaded_ok = dbg.stdout.starts_with("ok");
        // Already loaded into the dlopener (libgcc_s, say)? Then the loader did not search.
        if dbg.log.contains(&format!("find library={dep}")) {
            assert_eq!(
                ours.path,
                dbg.picked(dep),
                "nodeflib={nodeflib}\n{}",
                dbg.log
            );
        }
        assert_eq!(
            ours.resolves(),
            loaded_ok,
            "nodeflib={nodeflib}: {}",
            dbg.stdout
        );
        results.push(ours.resolves());
    }
    assert_eq!(results, vec![true, false]);
}

/// An empty LD_LIBRARY_PATH entry (a stray `:`) means the working directory: a library there
/// wins, for the loader and for us.
#[test]
fn empty_ld_library_path_entry_is_the_working_directory() {
    let c = case(cc::Exe::dlopener());
    let work = c.top.join("work");
    let sys = c.top.join("sys");
    cc::Lib::new("libedcwd.so").build(&work.join("libedcwd.so"));
    cc::Lib::new("libedcwd.so").build(&sys.join("libedcwd.so"));
    let llp = format!(":{}", sys.display());
    let loader = Loader::new(&Root::host(), &env(Some(&llp))).with_cwd(&work);
    let ours = loader.resolve("libedcwd.so", &app(&c));
    let dbg = cc::ld_debug(
        &c.exe,
        &["libedcwd.so"],
        &[("LD_LIBRARY_PATH", &llp)],
        Some(&work),
    );
    let theirs = dbg.picked("libedcwd.so").map(|p| work.join(p));
    assert_eq!(ours.path, theirs, "{}", dbg.log);
    assert_eq!(ours.path, Some(work.join("libedcwd.so")));
}
