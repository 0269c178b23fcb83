//! The field reports (`../shared/seeds/`), reproduced as fake machines and run through
//! `envdoctor check --root`: each must print the right finding with its evidence and exit 1, and
//! its healthy twin must be quiet (no finding of that rule, exit 0).
//!
//! A machine is a directory tree built here: stand-in interpreters (shell scripts that would
//! leave a marker if run: nothing is ever executed), venvs with `pyvenv.cfg`, `.dist-info`
//! directories, and the real checkpoint files under `fixtures/checkpoints/` (written by the real
//! frameworks; see `fixtures/checkpoints/make_fixtures.py`).

use serde_json::Value;

#[path = "common/machine.rs"]
mod machine;
use machine::*;

// Seed 001: InceptionV3 replaced by InceptionV4 in code, but the training directory still holds
// the V3 checkpoint that `checkpoint` names as latest: "Key InceptionV4/... not found".
#[test]
fn seed_001_latest_checkpoint_is_the_other_model() {
    let mut m = Machine::new();
    m.active_venv("3.6", "/opt/venv", &[("tensorflow-gpu", "1.12.0")]);
    m.checkpoint("mixed_families", "/data/train");
    let (code, report) = m.check(&["--checkpoint", "/data/train"]);
    assert_eq!(code, 1);
    let f = fired(&report, "ckpt-latest-other-family");
    let msg = f["message"].as_str().unwrap();
    assert!(
        msg.contains("InceptionV3") && msg.contains("InceptionV4"),
        "{msg}"
    );
    assert!(
        evidence_has(f, "tf_state.latest_is_other_family", &Value::Bool(true)),
        "{f:#}"
    );

    // Healthy twin: only the V4 checkpoint, named as latest.
    let twin = Machine::new();
    twin.checkpoint(
        "mixed_families/model.ckpt-200.index",
        "/data/train/model.ckpt-200.index",
    );
    twin.checkpoint(
        "mixed_families/model.ckpt-200.data-00000-of-00001",
        "/data/train/model.ckpt-200.data-00000-of-00001",
    );
    twin.write(
        "/data/train/checkpoint",
        "model_checkpoint_path: \"model.ckpt-200\"\nall_model_checkpoint_paths: \"model.ckpt-200\"\n",
    );
    let (code, report) = twin.check(&["--checkpoint", "/data/train"]);
    assert!(findings_of(&report, "ckpt-latest-other-family").is_empty());
    assert_eq!(code, 0, "{:#}", report["findings"]);
}

// Seed 003: a model trained with TF < 1.2 RNN cells (`lstm_cell/weights`, `.../biases`) restored
// on another machine whose TensorFlow names them `kernel`/`bias`.
#[test]
fn seed_003_pre_1_2_rnn_names_under_a_newer_tensorflow() {
    let mut m = Machine::new();
    m.active_venv("3.6", "/opt/venv", &[("tensorflow", "1.4.0")]);
    m.checkpoint("tf1_rnn_weights_biases", "/work/ckpt");
    let (code, report) = m.check(&["--checkpoint", "/work/ckpt"]);
    assert_eq!(code, 1);
    let f = fired(&report, "ckpt-rnn-pre-tf12-names");
    let msg = f["message"].as_str().unwrap();
    assert!(
        msg.contains("tensorflow 1.4.0") && msg.contains("/opt/venv/bin/python"),
        "{msg}"
    );
    assert!(
        msg.contains("lstm_cell/weights") || msg.contains("weights"),
        "{msg}"
    );

    // Healthy twin: the TensorFlow that wrote it (1.1).
    let mut twin = Machine::new();
    twin.active_venv("3.6", "/opt/venv", &[("tensorflow", "1.1.0")]);
    twin.checkpoint("tf1_rnn_weights_biases", "/work/ckpt");
    let (code, report) = twin.check(&["--checkpoint", "/work/ckpt"]);
    assert!(findings_of(&report, "ckpt-rnn-pre-tf12-names").is_empty());
    assert_eq!(code, 0, "{:#}", report["findings"]);
}

// Seed 000: a TF1 name-based checkpoint restored by TF 2's loader:
// "Key _CHECKPOINTABLE_OBJECT_GRAPH not found in checkpoint".
#[test]
fn seed_000_name_based_checkpoint_under_tensorflow_2() {
    let mut m = Machine::new();
    m.active_venv("3.8", "/opt/venv", &[("tensorflow", "2.4.1")]);
    m.checkpoint("tf1_rnn_weights_biases", "/work/ckpt");
    let (_, report) = m.check(&["--checkpoint", "/work/ckpt"]);
    let f = fired(&report, "ckpt-tf1-name-based-with-tf2");
    assert!(f["message"].as_str().unwrap().contains("name-based"));

    let mut twin = Machine::new();
    twin.active_venv("3.8", "/opt/venv", &[("tensorflow", "2.4.1")]);
    twin.checkpoint("tf2_object_based", "/work/ckpt");
    let (_, report) = twin.check(&["--checkpoint", "/work/ckpt"]);
    assert!(findings_of(&report, "ckpt-tf1-name-based-with-tf2").is_empty());
}
