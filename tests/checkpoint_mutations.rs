//! Every real fixture, truncated at many lengths and with bytes flipped at many positions, is
//! inspected without a panic (the probe runner would turn a panic into a probe error; here it
//! fails the test) and without unbounded allocation. Deterministic: no randomness between runs.

use envdoctor::probe::checkpoint::discover::Candidate;
use envdoctor::probe::checkpoint::inspect_one;
use envdoctor::root::Root;
use std::fs;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/checkpoints")
}

/// Positions to mutate: the first 128 bytes, the last 32, and 128 spread by a fixed LCG.
fn positions(len: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..len.min(128)).collect();
    v.extend(len.saturating_sub(32)..len);
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for _ in 0..128 {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        if len > 0 {
            v.push((x >> 33) as usize % len);
        }
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// Run `check` on every variant of `bytes` written to `target`.
fn mutate(bytes: &[u8], target: &Path, inspect: &dyn Fn() -> bool) -> (usize, usize) {
    let (mut variants, mut errors) = (0, 0);
    let n = bytes.len();
    let mut cuts: Vec<usize> = (0..64).map(|i| n * i / 64).collect();
    cuts.extend([1, 7, 8, 9, n.saturating_sub(1)]);
    for cut in cuts {
        fs::write(target, &bytes[..cut.min(n)]).unwrap();
        variants += 1;
        errors += usize::from(inspect());
    }
    let mut b = bytes.to_vec();
    for p in positions(n) {
        for x in [0xff, 0x80] {
            b[p] ^= x;
            fs::write(target, &b).unwrap();
            variants += 1;
            errors += usize::from(inspect());
            b[p] ^= x;
        }
    }
    (variants, errors)
}

#[test]
fn mutated_files_never_panic() {
    let root = Root::host();
    let dir = tempfile::tempdir().unwrap();
    let files = [
        "tf1_rnn_weights_biases/model.ckpt-1.index",
        "tf2_object_based/ckpt-1.index",
        "tf_keras_2.h5",
        "keras_3.h5",
        "keras_3.keras",
        "torch_state_dict.pt",
        "torch_custom_object.pt",
        "torch_legacy.pt",
        "model.safetensors",
        "tiny.onnx",
    ];
    for rel in files {
        let src = fixtures().join(rel);
        let name = src.file_name().unwrap().to_string_lossy().into_owned();
        let target = dir.path().join(&name);
        let cand = if name.ends_with(".index") {
            Candidate::TfIndex(target.clone())
        } else {
            Candidate::File(target.clone())
        };
        let bytes = fs::read(&src).unwrap();
        let (variants, errors) = mutate(&bytes, &target, &|| {
            inspect_one(&root, &cand).entry.error.is_some()
        });
        // Most variants must be caught as errors (checksums, magic numbers, lengths); some
        // flips land in payload bytes that no header covers and are legitimately read.
        assert!(
            errors > 0,
            "{rel}: no variant of {variants} was reported as an error"
        );
    }
}

#[test]
fn mutated_saved_model_pb_and_state_files_never_panic() {
    let root = Root::host();
    let dir = tempfile::tempdir().unwrap();
    let sm = dir.path().join("sm");
    fs::create_dir(&sm).unwrap();
    let pb = fs::read(fixtures().join("saved_model_custom_layer/saved_model.pb")).unwrap();
    let cand = Candidate::SavedModel(sm.clone());
    let (_, errors) = mutate(&pb, &sm.join("saved_model.pb"), &|| {
        inspect_one(&root, &cand).entry.error.is_some()
    });
    assert!(errors > 0);
    let km = fs::read(fixtures().join("saved_model_custom_layer/keras_metadata.pb")).unwrap();
    fs::write(sm.join("saved_model.pb"), &pb).unwrap();
    mutate(&km, &sm.join("keras_metadata.pb"), &|| {
        inspect_one(&root, &cand).entry.error.is_some()
    });
}
