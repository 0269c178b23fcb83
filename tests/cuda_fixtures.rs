//! The field-report fixture machines (`fixtures/machines/lib-*`), completed at run time with
//! real shared libraries compiled by `cc`, probed through `--root` (the `cuda` section of a real
//! `envdoctor snapshot`) and through the loader API; where the fixture can run on this host
//! (absolute temp paths), the real loader is asked too.

use crate::common::cc;

use assert_cmd::Command;
use envdoctor::probe::libs::links;
use envdoctor::probe::libs::search::{pip_nvidia_dirs, FoundVia, Loader, Object, Requester};
use envdoctor::root::{Env, Root};
use serde_json::Value;
use std::path::{Path, PathBuf};

use crate::common::machine;
use machine::copy_tree;

fn fixture(name: &str) -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let dst = t.path().canonicalize().unwrap().join("m");
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/machines")
            .join(name),
        &dst,
    );
    (t, dst)
}

fn snapshot(root: &Path, env: &[(&str, &str)]) -> Value {
    let mut cmd = Command::cargo_bin("envdoctor").unwrap();
    cmd.env_clear()
        .args(["snapshot", "--no-load", "--root"])
        .arg(root);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn strs(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn cuda111_ships_cusolver_11_only() {
    let (_t, m) = fixture("lib-cuda111-cusolver");
    let lib64 = m.join("usr/local/cuda-11.1/lib64");
    cc::Lib::new("libcusolver.so.11").build(&lib64.join("libcusolver.so.11.0.1.105"));
    cc::Lib::new("libcudart.so.11.0")
        .returns("cudaRuntimeGetVersion", 11010)
        .build(&lib64.join("libcudart.so.11.1.74"));
    cc::Lib::new("libcublas.so.11").build(&lib64.join("libcublas.so.11.3.0.106"));
    cc::Lib::new("libcuda.so.1")
        .returns("cuDriverGetVersion", 11010)
        .build(&m.join("usr/lib/x86_64-linux-gnu/libcuda.so.455.23.05"));

    let snap = snapshot(&m, &[]);
    let cuda = &snap["cuda"];
    let tks = cuda["toolkits"].as_array().unwrap();
    assert_eq!(tks.len(), 1, "{cuda:#}");
    let tk = &tks[0];
    assert_eq!(tk["path"], "/usr/local/cuda-11.1");
    assert_eq!(tk["version"], "11.1.1");
    assert_eq!(tk["version_source"], "/usr/local/cuda-11.1/version.json");
    // /usr/local/cuda links to it, and ld.so.conf.d/cuda.conf names its lib64.
    assert_eq!(strs(&tk["aliases"]), vec!["/usr/local/cuda", "ld.so.conf"]);
    assert_eq!(tk["cudnn_version"], "8.0.5");
    assert_eq!(tk["has_libdevice"], true);
    assert_eq!(tk["has_ptxas"], true);
    let libs = strs(&tk["libraries"]);
    assert!(libs.contains(&"libcusolver.so.11".to_string()), "{libs:?}");
    assert!(!libs.iter().any(|l| l.starts_with("libcusolver.so.10")));
    assert_eq!(cuda["default_toolkit"], "/usr/local/cuda-11.1");
    let drv = &cuda["driver"];
    assert_eq!(drv["version"], "455.32.00");
    assert_eq!(drv["kernel_module"], "455.32.00");
    assert_eq!(drv["libcuda"], "455.23.05");
    assert_eq!(
        drv["libcuda_path"],
        "/usr/lib/x86_64-linux-gnu/libcuda.so.455.23.05"
    );
    assert_eq!(drv["mismatch"], true);
    assert!(cuda.get("ld_cache").is_none(), "no cache in this fixture");

    // What TensorFlow 2.4 asks for, with the toolkit on LD_LIBRARY_PATH.
    let root = Root::new(&m);
    let loader = Loader::new(
        &root,
        &Env::from_pairs([("LD_LIBRARY_PATH", "/usr/local/cuda/lib64")]),
    );
    let tf = Requester::new(Object::bare("/usr/bin/python3").main_executable());
    let r10 = loader.resolve("libcusolver.so.10", &tf);
    assert!(!r10.resolves());
    assert_eq!(r10.tried[0].dir, Path::new("/usr/local/cuda/lib64"));
    let r11 = loader.resolve("libcusolver.so.11", &tf);
    assert_eq!(
        r11.path.as_deref(),
        Some(Path::new("/usr/local/cuda/lib64/libcusolver.so.11"))
    );
    assert_eq!(r11.found_via, Some(FoundVia::LdLibraryPath));
    let f = links::describe(&root, r11.path.as_ref().unwrap());
    assert_eq!(
        f.realpath.as_deref(),
        Some(Path::new(
            "/usr/local/cuda-11.1/lib64/libcusolver.so.11.0.1.105"
        ))
    );
    assert!(!f.version_mismatch);
    // libcudart.so.11.0 -> libcudart.so.11.1.74 is how CUDA 11 ships it (soname 11.0).
    let cudart = links::describe(&root, Path::new("/usr/local/cuda/lib64/libcudart.so.11.0"));
    assert_eq!(cudart.soname.as_deref(), Some("libcudart.so.11.0"));
    assert!(!cudart.version_mismatch);
    // Elsewhere on the machine: only the toolkit's copy.
    let all = loader.all_candidates("libcusolver.so.11", &[]);
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(all[0].origin, "ld-library-path");
}

/// With the right to chroot (root), `ldconfig -r` writes the fixture's own cache; the snapshot
/// then reports it, resolution uses it, and a library installed afterwards makes it stale.
#[test]
fn cuda111_with_a_generated_cache() {
    let (_t, m) = fixture("lib-cuda111-cusolver");
    let lib64 = m.join("usr/local/cuda-11.1/lib64");
    cc::Lib::new("libcusolver.so.11").build(&lib64.join("libcusolver.so.11.0.1.105"));
    let ok = std::process::Command::new("ldconfig")
        .arg("-r")
        .arg(&m)
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        eprintln!("skipped: `ldconfig -r` needs root here");
        return;
    }
    let snap = snapshot(&m, &[]);
    let c = &snap["cuda"]["ld_cache"];
    assert_eq!(c["path"], "/etc/ld.so.cache");
    assert_eq!(c["format"], "new");
    assert!(c["entries"].as_u64().unwrap() >= 1);
    assert_eq!(strs(&c["conf_dirs"]), vec!["/usr/local/cuda/lib64"]);
    assert_eq!(c["stale"], false, "{c:#}");

    let root = Root::new(&m);
    let loader = Loader::new(&root, &Env::default());
    let r = loader.resolve(
        "libcusolver.so.11",
        &Requester::new(Object::bare("/app").main_executable()),
    );
    assert_eq!(r.found_via, Some(FoundVia::LdSoCache));
    assert_eq!(
        r.path.as_deref(),
        Some(Path::new("/usr/local/cuda/lib64/libcusolver.so.11"))
    );

    assert!(c.get("dangling").is_none());

    cc::Lib::new("libcusparse.so.11").build(&lib64.join("libcusparse.so.11.3.0.10"));
    std::fs::remove_file(lib64.join("libcusolver.so.11.0.1.105")).unwrap();
    let snap = snapshot(&m, &[]);
    let c = &snap["cuda"]["ld_cache"];
    assert_eq!(c["stale"], true);
    assert_eq!(
        strs(&c["stale_files"]),
        vec!["/usr/local/cuda/lib64/libcusparse.so.11.3.0.10"]
    );
    // ldconfig also cached the development link `libcusolver.so`: both now lead nowhere.
    let mut dangling = strs(&c["dangling"]);
    dangling.sort();
    assert_eq!(
        dangling,
        vec![
            "libcusolver.so => /usr/local/cuda/lib64/libcusolver.so",
            "libcusolver.so.11 => /usr/local/cuda/lib64/libcusolver.so.11"
        ]
    );
}

#[test]
fn cupti_link_claims_another_version() {
    let (_t, m) = fixture("lib-cupti-link");
    let dir = m.join("usr/local/cuda-10.2/extras/CUPTI/lib64");
    cc::Lib::new("libcupti.so.10.2")
        .returns("cuptiGetVersion", 13)
        .build(&dir.join("libcupti.so.10.2.75"));
    let root = Root::new(&m);
    let loader = Loader::new(
        &root,
        &Env::from_pairs([("LD_LIBRARY_PATH", "/usr/local/cuda/extras/CUPTI/lib64")]),
    );
    let r = loader.resolve(
        "libcupti.so.10.1",
        &Requester::new(Object::bare("/usr/bin/python3").main_executable()),
    );
    // The loader happily opens it: the trap is only visible in the link facts.
    let p = r.path.clone().unwrap();
    assert_eq!(
        p,
        Path::new("/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.10.1")
    );
    let f = links::describe(&root, &p);
    assert_eq!(f.chain.len(), 2);
    assert_eq!(f.name_version.as_deref(), Some("10.1"));
    assert_eq!(f.file_version.as_deref(), Some("10.2.75"));
    assert_eq!(f.soname.as_deref(), Some("libcupti.so.10.2"));
    assert!(f.version_mismatch);
    assert_eq!(
        f.mismatch,
        Some((
            "libcupti.so.10.1".to_string(),
            "libcupti.so.10.2".to_string()
        ))
    );
    // The CUPTI dir is known as a toolkit location even without LD_LIBRARY_PATH.
    let bare = Loader::new(&root, &Env::default());
    let all = bare.all_candidates("libcupti.so.10.1", &[]);
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].origin, "cuda-toolkit");

    let snap = snapshot(&m, &[]);
    let tk = &snap["cuda"]["toolkits"][0];
    assert_eq!(tk["version"], "10.2.89");
    assert_eq!(tk["version_source"], "/usr/local/cuda-10.2/version.txt");
    assert_eq!(tk["has_ptxas"], false);
    assert!(strs(&tk["libraries"]).contains(&"libcupti.so.10.1".to_string()));
}

/// Build the cuDNN fixture's libraries; returns the site-packages dir.
fn build_cudnn_fixture(m: &Path) -> PathBuf {
    let sys = m.join("usr/local/cuda-12.1/lib64");
    cc::Lib::new("libcudnn.so.8")
        .returns("cudnnGetVersion", 8600)
        .build(&sys.join("libcudnn.so.8.6.0"));
    cc::Lib::new("libcudnn_cnn_infer.so.8").build(&sys.join("libcudnn_cnn_infer.so.8.6.0"));
    cc::Lib::new("libcudnn_ops_infer.so.8").build(&sys.join("libcudnn_ops_infer.so.8.9.2"));
    cc::symlink(
        "libcudnn_cnn_infer.so.8.6.0",
        sys.join("libcudnn_cnn_infer.so.8"),
    );
    cc::symlink(
        "libcudnn_ops_infer.so.8.9.2",
        sys.join("libcudnn_ops_infer.so.8"),
    );
    let site = m.join("opt/venv/lib/python3.11/site-packages");
    let pip = site.join("nvidia/cudnn/lib");
    cc::Lib::new("libcudnn.so.8")
        .returns("cudnnGetVersion", 8902)
        .build(&pip.join("libcudnn.so.8"));
    cc::Lib::new("libtorch_cuda.so")
        .runpath("$ORIGIN/../../nvidia/cudnn/lib")
        .needs(&pip, ":libcudnn.so.8")
        .build(&site.join("torch/lib/libtorch_cuda.so"));
    site
}

#[test]
fn system_cudnn_on_ld_library_path_shadows_the_pip_one() {
    let (_t, m) = fixture("lib-ldpath-cudnn");
    let site = build_cudnn_fixture(&m);
    let root = Root::new(&m);
    let site_m = Path::new("/opt/venv/lib/python3.11/site-packages");
    let torch = site_m.join("torch/lib/libtorch_cuda.so");
    let req = Requester::new(Object::read(&root, &torch).unwrap())
        .loaded_by(Object::bare("/opt/venv/bin/python").main_executable());
    let env_line = std::fs::read_to_string(m.join("ENV")).unwrap();
    let llp = env_line.trim().strip_prefix("LD_LIBRARY_PATH=").unwrap();

    let shadowed = Loader::new(&root, &Env::from_pairs([("LD_LIBRARY_PATH", llp)]));
    let r = shadowed.resolve("libcudnn.so.8", &req);
    assert_eq!(
        r.path.as_deref(),
        Some(Path::new("/usr/local/cuda/lib64/libcudnn.so.8"))
    );
    assert_eq!(r.found_via, Some(FoundVia::LdLibraryPath));
    let all = shadowed.all_candidates("libcudnn.so.8", &pip_nvidia_dirs(&root, site_m));
    let origins: Vec<_> = all.iter().map(|f| f.origin.as_str()).collect();
    assert_eq!(origins, vec!["ld-library-path", "pip-nvidia"], "{all:?}");
    assert_eq!(
        links::describe(&root, &all[0].path).file_version.as_deref(),
        Some("8.6.0")
    );

    let clean = Loader::new(&root, &Env::default());
    let r = clean.resolve("libcudnn.so.8", &req);
    assert_eq!(
        r.path.as_deref(),
        Some(
            site_m
                .join("torch/lib/../../nvidia/cudnn/lib/libcudnn.so.8")
                .as_path()
        )
    );
    assert_eq!(r.found_via, Some(FoundVia::Runpath));

    let mixed = links::mixed_releases(&root, Path::new("/usr/local/cuda/lib64"));
    assert_eq!(mixed.len(), 1);
    assert_eq!(mixed[0].family, "cudnn");
    assert_eq!(
        mixed[0].versions.keys().cloned().collect::<Vec<_>>(),
        vec!["8.6.0".to_string(), "8.9.2".to_string()]
    );
    let _ = site;
}

/// The same machine run for real on this host (its absolute temp paths): the real loader,
/// loading torch's library from an executable, picks what the emulation says.
#[test]
fn cudnn_shadowing_agrees_with_the_real_loader() {
    let (_t, m) = fixture("lib-ldpath-cudnn");
    let site = build_cudnn_fixture(&m);
    let exe = cc::Exe::dlopener().build(&m.join("opt/venv/bin/app"));
    let torch = site.join("torch/lib/libtorch_cuda.so");
    let root = Root::host();
    let llp = m.join("usr/local/cuda/lib64");
    let llp = llp.to_str().unwrap();
    for env in [vec![("LD_LIBRARY_PATH", llp)], vec![]] {
        let loader = Loader::new(&root, &Env::from_pairs(env.iter().cloned()));
        let app = Requester::new(Object::read(&root, &exe).unwrap().main_executable());
        let rt = loader.resolve(torch.to_str().unwrap(), &app);
        let req = app.child(Object::read(&root, rt.path.as_ref().unwrap()).unwrap());
        let ours = loader.resolve("libcudnn.so.8", &req);
        let dbg = cc::ld_debug(&exe, &[torch.to_str().unwrap()], &env, None);
        assert_eq!(
            ours.path,
            dbg.picked("libcudnn.so.8"),
            "{env:?}\n{}",
            dbg.log
        );
        assert!(dbg.stdout.starts_with("ok"), "{}", dbg.stdout);
    }
}
