//! Checkpoint discovery in a project directory: bounded depth, skipped directories
//! (.git, virtualenvs, node_modules, site-packages, __pycache__), no symlink loops, and
//! `--checkpoint` paths that do not exist.

use envdoctor::probe::{collect, Options};
use envdoctor::root::{Env, Root};
use std::fs;
use std::path::{Path, PathBuf};

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/checkpoints")
        .join(rel)
}

fn paths_found(project: &Path) -> (Vec<String>, envdoctor::Snapshot) {
    let mut opts = Options::new(Root::host(), Env::default());
    opts.only = vec!["checkpoint".into()];
    opts.project = Some(project.to_path_buf());
    let snap = collect(opts);
    let rel = snap
        .checkpoints
        .iter()
        .map(|c| {
            Path::new(&c.path)
                .strip_prefix(project)
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    (rel, snap)
}

#[test]
fn discovery_is_bounded_and_skips_environments() {
    let p = tempfile::tempdir().unwrap();
    let pt = fixture("torch_state_dict.pt");
    let put = |rel: &str| {
        let dst = p.path().join(rel);
        fs::create_dir_all(dst.parent().unwrap()).unwrap();
        fs::copy(&pt, &dst).unwrap();
    };
    put("runs/exp1/best.pt");
    put("a/b/c/deepest.pt"); // in a directory 3 levels down: the deepest looked at
    put("a/b/c/d/too_deep.pt"); // 4 levels down: beyond the limit
    put(".git/lfs/objects/x.pt");
    put("node_modules/pkg/m.pt");
    put("lib/python3.11/site-packages/pkg/m.pt");
    put("__pycache__/m.pt");
    put(".cache/m.pt");
    put("target/debug/m.pt");
    fs::write(
        p.path().join("target/CACHEDIR.TAG"),
        "Signature: 8a477f597d28d172789f06886806bc55\n",
    )
    .unwrap();
    put("venv/lib/m.pt");
    fs::write(p.path().join("venv/pyvenv.cfg"), "home = /usr/bin\n").unwrap();
    // A directory the user marked: test data, never trained from.
    put("fixtures/broken/m.pt");
    fs::write(p.path().join("fixtures/.envdoctorignore"), "").unwrap();
    fs::write(p.path().join("README.md"), "not a checkpoint").unwrap();
    // A symlink loop and a symlink to a directory elsewhere: never followed.
    std::os::unix::fs::symlink(p.path(), p.path().join("runs/loop")).unwrap();
    // A SavedModel: one entry for the directory, not one more for variables/variables.index.
    let sm = p.path().join("export/sm");
    fs::create_dir_all(sm.join("variables")).unwrap();
    for f in ["saved_model.pb", "keras_metadata.pb", "fingerprint.pb"] {
        fs::copy(
            fixture(&format!("saved_model_custom_layer/{f}")),
            sm.join(f),
        )
        .unwrap();
    }
    for f in ["variables.index", "variables.data-00000-of-00001"] {
        fs::copy(
            fixture(&format!("saved_model_custom_layer/variables/{f}")),
            sm.join("variables").join(f),
        )
        .unwrap();
    }
    let (found, snap) = paths_found(p.path());
    assert_eq!(
        found,
        ["a/b/c/deepest.pt", "export/sm", "runs/exp1/best.pt"],
        "{:?}",
        snap.probe_errors
    );
    assert!(snap.probe_errors.is_empty(), "{:?}", snap.probe_errors);
}

#[test]
fn discovery_stops_at_its_count_limit_with_a_probe_error() {
    let p = tempfile::tempdir().unwrap();
    for i in 0..205 {
        fs::write(p.path().join(format!("m{i:03}.pt")), b"x").unwrap();
    }
    let (found, snap) = paths_found(p.path());
    assert_eq!(found.len(), 200);
    assert!(snap
        .probe_errors
        .iter()
        .any(|e| e.message.contains("discovery stopped")));
}

#[test]
fn a_missing_checkpoint_argument_is_a_probe_error_and_a_tf_prefix_is_accepted() {
    let mut opts = Options::new(Root::host(), Env::default());
    opts.only = vec!["checkpoint".into()];
    opts.checkpoints = vec![
        PathBuf::from("/nonexistent/envdoctor/model.pt"),
        fixture("tf1_rnn_weights_biases/model.ckpt-1"),
    ];
    let snap = collect(opts);
    assert_eq!(snap.checkpoints.len(), 1);
    assert_eq!(snap.checkpoints[0].format, "tf-checkpoint");
    assert_eq!(snap.probe_errors.len(), 1);
    assert_eq!(
        snap.probe_errors[0].path.as_deref(),
        Some("/nonexistent/envdoctor/model.pt")
    );
}

#[test]
fn machine_paths_go_through_the_root() {
    // With --root, /ckpt is looked up inside the fake machine.
    let machine = tempfile::tempdir().unwrap();
    fs::create_dir(machine.path().join("ckpt")).unwrap();
    fs::copy(
        fixture("model.safetensors"),
        machine.path().join("ckpt/model.safetensors"),
    )
    .unwrap();
    let mut opts = Options::new(Root::new(machine.path()), Env::default());
    opts.only = vec!["checkpoint".into()];
    opts.checkpoints = vec![PathBuf::from("/ckpt")];
    let snap = collect(opts);
    assert_eq!(snap.checkpoints.len(), 1, "{:?}", snap.probe_errors);
    assert_eq!(snap.checkpoints[0].path, "/ckpt/model.safetensors");
    assert_eq!(snap.checkpoints[0].format, "safetensors");
}
