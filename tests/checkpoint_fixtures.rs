//! The checkpoint probe on files written by the real frameworks (fixtures/checkpoints/, see
//! VERSIONS.txt), compared with what the frameworks themselves read back from the same files
//! (expected_tf.json, expected_torch.json, written by make_fixtures.py).

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/checkpoints")
}

fn expected(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixtures().join(name)).unwrap()).unwrap()
}

/// `envdoctor snapshot --checkpoint fixtures/checkpoints`, as JSON.
fn snapshot() -> Value {
    let project = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("envdoctor")
        .unwrap()
        .args(["snapshot", "--project"])
        .arg(project.path())
        .arg("--checkpoint")
        .arg(fixtures())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn entry<'a>(snap: &'a Value, rel: &str) -> &'a Value {
    let want = fixtures().join(rel);
    snap["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| Path::new(c["path"].as_str().unwrap()) == want)
        .unwrap_or_else(|| panic!("no checkpoint entry for {rel}"))
}

#[test]
fn every_fixture_is_read_without_errors_and_matches_the_frameworks() {
    let snap = snapshot();
    let errors: Vec<&Value> = snap["probe_errors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["probe"] == "checkpoint")
        .collect();
    assert!(errors.is_empty(), "{errors:?}");

    // TF: our index reading = tf.train.list_variables (names and shapes).
    let tf = expected("expected_tf.json");
    for prefix in [
        "tf1_rnn_weights_biases/model.ckpt-1",
        "tf2_object_based/ckpt-1",
        "mixed_families/model.ckpt-100",
        "mixed_families/model.ckpt-200",
    ] {
        let ours: Vec<(String, Value)> = entry(&snap, prefix)["tf"]["tensors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| (t["name"].as_str().unwrap().to_string(), t["shape"].clone()))
            .collect();
        let theirs: Vec<(String, Value)> = tf[prefix]["variables"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| (v[0].as_str().unwrap().to_string(), v[1].clone()))
            .collect();
        assert_eq!(ours, theirs, "{prefix}");
        assert_eq!(entry(&snap, prefix)["tf"]["missing_shards"], Value::Null);
    }
    // `latest` as tf.train.get_checkpoint_state resolves it.
    for dir in [
        "tf1_rnn_weights_biases",
        "tf2_object_based",
        "mixed_families",
    ] {
        let st = &entry(&snap, &format!("{dir}/checkpoint"))["tf_state"];
        let resolved = st["latest_resolved"].as_str().unwrap();
        assert!(
            resolved.ends_with(&format!("/{}", tf[dir]["latest"].as_str().unwrap())),
            "{dir}: {resolved}"
        );
        assert_eq!(st["latest_exists"], true);
    }
    let sm_vars = &entry(&snap, "saved_model_custom_layer")["saved_model"]["variables"]["tensors"];
    let n = tf["saved_model_custom_layer/variables/variables"]["variables"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(sm_vars.as_array().unwrap().len(), n);
    let h5 = &entry(&snap, "tf_keras_2.h5")["keras"];
    assert_eq!(h5["keras_version"], tf["tf_keras_2.h5"]["keras_version"]);
    assert_eq!(h5["backend"], tf["tf_keras_2.h5"]["backend"]);

    // torch: our opcode scan = torch.serialization.get_unsafe_globals_in_checkpoint, and our
    // weights_only verdict = what torch.load(weights_only=True) did.
    let pt = expected("expected_torch.json");
    for name in [
        "torch_state_dict.pt",
        "torch_custom_object.pt",
        "torch_legacy.pt",
    ] {
        let t = &entry(&snap, name)["torch"];
        if !pt[name]["unsafe_globals"].is_null() {
            assert_eq!(t["unsafe_globals"], pt[name]["unsafe_globals"], "{name}");
        }
        assert_eq!(
            t["needs_weights_only_false"], pt[name]["weights_only_refuses"],
            "{name}"
        );
    }
    let st = &entry(&snap, "model.safetensors")["safetensors"];
    let keys: Vec<&Value> = st["tensors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["name"])
        .collect();
    let want: Vec<&Value> = pt["model.safetensors"]["keys"]
        .as_array()
        .unwrap()
        .iter()
        .collect();
    assert_eq!(keys, want);
    assert_eq!(st["metadata"], pt["model.safetensors"]["metadata"]);
    let onnx = &entry(&snap, "tiny.onnx")["onnx"];
    assert_eq!(onnx["ir_version"], pt["tiny.onnx"]["ir_version"]);
    assert_eq!(onnx["producer_name"], pt["tiny.onnx"]["producer_name"]);
    let opsets: Vec<Value> = onnx["opsets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["version"].clone())
        .collect();
    assert_eq!(opsets, vec![pt["tiny.onnx"]["opsets"][0][1].clone()]);
    let k3 = &entry(&snap, "keras_3.h5")["keras"];
    assert_eq!(k3["keras_version"], pt["keras_3.h5"]["keras_version"]);
    assert_eq!(k3["backend"], pt["keras_3.h5"]["backend"]);
}

#[test]
fn the_facts_behind_the_field_reports_are_there() {
    let snap = snapshot();
    // Seed 003: TF < 1.2 RNN names; seed 000: a name-based checkpoint.
    let tf1 = &entry(&snap, "tf1_rnn_weights_biases/model.ckpt-1")["tf"];
    assert_eq!(tf1["object_based"], false);
    assert_eq!(tf1["rnn_key_naming"], "weights_biases");
    assert_eq!(
        tf1["optimizer_slots"],
        serde_json::json!(["Adam", "Adam_1"])
    );
    assert_eq!(tf1["scopes"], serde_json::json!(["rnn", "softmax"]));
    assert_eq!(tf1["meta_tensorflow_version"], "2.15.1");
    assert_eq!(tf1["is_latest"], true);
    let tf2 = &entry(&snap, "tf2_object_based/ckpt-1")["tf"];
    assert_eq!(tf2["object_based"], true);
    assert_eq!(tf2["rnn_key_naming"], Value::Null);
    // Seed 001: two families; latest names the V3 one while V4 is newer.
    let st = &entry(&snap, "mixed_families/checkpoint")["tf_state"];
    assert_eq!(st["mixed_families"], true);
    assert_eq!(st["latest_family"], "InceptionV3+lstm");
    assert_eq!(st["newest_family"], "InceptionV4+lstm");
    assert_eq!(st["latest_is_other_family"], true);
    assert_eq!(
        entry(&snap, "tf1_rnn_weights_biases/checkpoint")["tf_state"]["latest_is_other_family"],
        false
    );
    // SavedModel producer and custom layers (seed 002).
    let sm = entry(&snap, "saved_model_custom_layer");
    assert_eq!(sm["format"], "tf-saved-model");
    assert_eq!(sm["producer_version"], "2.15.1");
    assert_eq!(sm["saved_model"]["tags"], serde_json::json!(["serve"]));
    assert_eq!(
        sm["saved_model"]["custom_layers"],
        serde_json::json!(["Scale"])
    );
    assert_eq!(sm["saved_model"]["keras_metadata"], true);
    assert_eq!(sm["saved_model"]["fingerprint"], true);
    // Keras files: which Keras wrote them.
    let h5 = &entry(&snap, "tf_keras_2.h5")["keras"];
    assert_eq!(h5["keras_major"], 2);
    assert_eq!(h5["custom_layers"], serde_json::json!(["Scale"]));
    assert_eq!(h5["has_training_config"], true);
    assert_eq!(entry(&snap, "keras_3.keras")["format"], "keras-v3");
    assert_eq!(entry(&snap, "keras_3.keras")["keras"]["keras_major"], 3);
    assert_eq!(entry(&snap, "tf_keras_2.keras")["keras"]["keras_major"], 2);
    // torch formats.
    assert_eq!(entry(&snap, "torch_legacy.pt")["format"], "torch-legacy");
    let custom = &entry(&snap, "torch_custom_object.pt")["torch"];
    assert_eq!(custom["zip"], true);
    assert_eq!(custom["storage_locations"], serde_json::json!(["cpu"]));
    // HF directory.
    let hf = entry(&snap, "hf_bert_tiny");
    assert_eq!(hf["hf"]["architectures"], serde_json::json!(["BertModel"]));
    assert_eq!(hf["producer_version"], "5.23.0");
}

#[test]
fn an_absolute_latest_from_the_training_machine_resolves_inside_the_directory() {
    // Seed 001's state file named `/output/ckpt/model.ckpt-5049`: a path of the machine that
    // trained. Like tf.train.latest_checkpoint, fall back to that file name in the directory.
    let dir = tempfile::tempdir().unwrap();
    for f in std::fs::read_dir(fixtures().join("mixed_families")).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, dir.path().join(f.file_name().unwrap())).unwrap();
    }
    std::fs::write(
        dir.path().join("checkpoint"),
        "model_checkpoint_path: \"/output/ckpt/model.ckpt-100\"\n\
         all_model_checkpoint_paths: \"/output/ckpt/model.ckpt-100\"\n",
    )
    .unwrap();
    let out = Command::cargo_bin("envdoctor")
        .unwrap()
        .args(["snapshot", "--project"])
        .arg(dir.path())
        .arg("--checkpoint")
        .arg(dir.path())
        .output()
        .unwrap();
    let snap: Value = serde_json::from_slice(&out.stdout).unwrap();
    let state = snap["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["format"] == "tf-checkpoint-state")
        .unwrap();
    let st = &state["tf_state"];
    assert_eq!(st["latest"], "/output/ckpt/model.ckpt-100");
    assert_eq!(
        st["latest_resolved"],
        dir.path().join("model.ckpt-100").to_str().unwrap()
    );
    assert_eq!(st["latest_exists"], true);
    assert_eq!(st["latest_is_other_family"], true);
}
