//! Symbol versions and undefined symbols read statically, compared with what the real loader
//! says when it loads the same objects: `version 'X' not found` (the conda-libstdc++
//! `GLIBCXX_3.4.30` case) and `undefined symbol: ...` (the nvJitLink case).

use crate::common::cc;

use envdoctor::probe::libs::elf::{self, Symbol};
use envdoctor::root::Root;
use std::path::Path;

fn dlopen_with(exe: &Path, lib: &Path, llp: &Path) -> String {
    cc::ld_debug(
        exe,
        &[lib.to_str().unwrap()],
        &[("LD_LIBRARY_PATH", llp.to_str().unwrap())],
        None,
    )
    .stdout
}

#[test]
fn a_needed_symbol_version_missing_from_the_resolved_library() {
    let t = tempfile::tempdir().unwrap();
    let top = t.path().canonicalize().unwrap();
    let new = top.join("new");
    let old = top.join("old");
    // A libstdc++ stand-in: the new one defines EDCXX_1.0 and EDCXX_1.1, the old one 1.0 only.
    cc::Lib::new("libedcxx.so.6")
        .defines_versions(&["EDCXX_1.0", "EDCXX_1.1"])
        .build(&new.join("libedcxx.so.6"));
    cc::symlink("libedcxx.so.6", new.join("libedcxx.so"));
    cc::Lib::new("libedcxx.so.6")
        .defines_versions(&["EDCXX_1.0"])
        .build(&old.join("libedcxx.so.6"));
    // A framework library built against the new one, using a 1.1 symbol.
    let fw = cc::Lib::new("libedfw.so")
        .c("extern int envdoctor_v1(void); int fw_entry(void) { return envdoctor_v1(); }")
        .needs(&new, "edcxx")
        .build(&top.join("fw/libedfw.so"));
    let root = Root::host();
    let info = elf::read(&root, &fw).unwrap();
    assert_eq!(info.needs_from("libedcxx.so.6"), ["EDCXX_1.1".to_string()]);
    let (_, syms) = elf::read_with_symbols(&root, &fw).unwrap();
    assert!(syms.undefined.contains(&Symbol {
        name: "envdoctor_v1".into(),
        version: Some("EDCXX_1.1".into()),
        default: true,
    }));
    assert!(syms.exported.iter().any(|s| s.name == "fw_entry"));

    let exe = cc::Exe::dlopener().build(&top.join("bin/app"));
    for (dir, expect_ok) in [(&new, true), (&old, false)] {
        let dep = elf::read(&root, &dir.join("libedcxx.so.6")).unwrap();
        let predicted_ok = info
            .needs_from("libedcxx.so.6")
            .iter()
            .all(|v| dep.version_defs.contains(v));
        let out = dlopen_with(&exe, &fw, dir);
        assert_eq!(predicted_ok, expect_ok, "{dir:?}");
        assert_eq!(out.starts_with("ok"), expect_ok, "{out}");
        if !expect_ok {
            assert!(out.contains("version `EDCXX_1.1' not found"), "{out}");
        }
    }
}

#[test]
fn an_undefined_symbol_missing_from_an_older_dependency() {
    let t = tempfile::tempdir().unwrap();
    let top = t.path().canonicalize().unwrap();
    let new = top.join("new");
    let old = top.join("old");
    cc::Lib::new("libednvjl.so.12")
        .returns("__nvJitLinkComplete_12_1", 1)
        .returns("__nvJitLinkComplete_12_4", 4)
        .build(&new.join("libednvjl.so.12"));
    cc::symlink("libednvjl.so.12", new.join("libednvjl.so"));
    cc::Lib::new("libednvjl.so.12")
        .returns("__nvJitLinkComplete_12_1", 1)
        .build(&old.join("libednvjl.so.12"));
    let sparse = cc::Lib::new("libedcusparse.so.12")
        .c("extern int __nvJitLinkComplete_12_4(void); int sp(void) { return __nvJitLinkComplete_12_4(); }")
        .needs(&new, "ednvjl")
        .build(&top.join("sparse/libedcusparse.so.12"));
    let root = Root::host();
    let (_, syms) = elf::read_with_symbols(&root, &sparse).unwrap();
    let exe = cc::Exe::dlopener().build(&top.join("bin/app"));
    for (dir, expect_ok) in [(&new, true), (&old, false)] {
        let (_, dep) = elf::read_with_symbols(&root, &dir.join("libednvjl.so.12")).unwrap();
        let missing: Vec<_> = syms
            .undefined
            .iter()
            .filter(|s| s.name.starts_with("__nvJitLink"))
            .filter(|s| !dep.provides(&s.name, s.version.as_deref()))
            .collect();
        let out = dlopen_with(&exe, &sparse, dir);
        assert_eq!(missing.is_empty(), expect_ok, "{missing:?}");
        assert_eq!(out.starts_with("ok"), expect_ok, "{out}");
        if !expect_ok {
            assert!(
                out.contains("undefined symbol: __nvJitLinkComplete_12_4"),
                "{out}"
            );
        }
    }
}

#[test]
fn libc_exports_versioned_symbols() {
    let Ok((info, syms)) =
        elf::read_with_symbols(&Root::host(), Path::new("/lib/x86_64-linux-gnu/libc.so.6"))
    else {
        eprintln!("skipped: not a Debian x86-64 layout");
        return;
    };
    assert!(info.version_defs.iter().any(|v| v == "GLIBC_2.34"));
    assert!(syms.provides("malloc", Some("GLIBC_2.2.5")));
    assert!(syms.provides("malloc", None));
    assert!(!syms.provides("envdoctor_no_such_symbol", None));
    assert!(syms.exported.len() > 1000, "{}", syms.exported.len());
}
