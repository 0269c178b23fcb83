//! Truncated, corrupted and hostile variants of every checkpoint format, made at run time from
//! the real fixtures: each becomes a fact (`error` on the entry + a probe error naming the file),
//! never a panic, a hang, or an allocation sized by a hostile length field.

use envdoctor::probe::{collect, Options};
use envdoctor::root::{Env, Root};
use envdoctor::Snapshot;
use std::fs;
use std::path::{Path, PathBuf};

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/checkpoints")
        .join(rel)
}

fn probe(paths: &[PathBuf]) -> Snapshot {
    let mut opts = Options::new(Root::host(), Env::default());
    opts.only = vec!["checkpoint".into()];
    opts.checkpoints = paths.to_vec();
    collect(opts)
}

/// Probe `path` and return (entry error, probe error message), asserting both name the file.
fn error_for(path: &Path) -> String {
    let snap = probe(&[path.to_path_buf()]);
    let want = path.to_string_lossy();
    let entry = snap
        .checkpoints
        .iter()
        .find(|c| want.starts_with(c.path.as_str()))
        .unwrap_or_else(|| panic!("no entry for {want}: {:?}", snap.checkpoints));
    let err = entry
        .error
        .clone()
        .unwrap_or_else(|| panic!("no error for {want}: {entry:?}"));
    let pe = snap
        .probe_errors
        .iter()
        .find(|e| e.probe == "checkpoint" && e.path.as_deref() == Some(entry.path.as_str()))
        .unwrap_or_else(|| {
            panic!(
                "no probe error naming {}: {:?}",
                entry.path, snap.probe_errors
            )
        });
    assert_eq!(pe.message, err);
    err
}

fn copy_truncated(src: &Path, dst: &Path, keep: usize) {
    let bytes = fs::read(src).unwrap();
    fs::write(dst, &bytes[..keep.min(bytes.len())]).unwrap();
}

fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
    out
}

#[test]
fn tf_index_truncated_hostile_and_missing_shards() {
    let dir = tempfile::tempdir().unwrap();
    let src = fixture("tf1_rnn_weights_biases/model.ckpt-1.index");
    let data = fixture("tf1_rnn_weights_biases/model.ckpt-1.data-00000-of-00001");

    let cut = dir.path().join("cut.index");
    copy_truncated(&src, &cut, 200);
    let err = error_for(&cut);
    assert!(err.contains("magic"), "{err}");

    // Footer's index handle rewritten to claim 2^60 bytes.
    let hostile = dir.path().join("hostile.index");
    let mut bytes = fs::read(&src).unwrap();
    let n = bytes.len();
    let mut footer = [varint(0), varint(0), varint(0), varint(1 << 60)].concat();
    footer.resize(40, 0);
    bytes[n - 48..n - 8].copy_from_slice(&footer);
    fs::write(&hostile, &bytes).unwrap();
    let err = error_for(&hostile);
    assert!(err.contains("claims"), "{err}");

    // A data block whose entry claims a huge value length: flip bytes inside the block.
    let garbled = dir.path().join("garbled.index");
    let mut bytes = fs::read(&src).unwrap();
    for b in bytes.iter_mut().take(40).skip(3) {
        *b = 0xff;
    }
    fs::write(&garbled, &bytes).unwrap();
    let _ = error_for(&garbled);

    // Index intact but its data shard missing, and another copy with a short shard: facts.
    let lone = dir.path().join("lone.index");
    fs::copy(&src, &lone).unwrap();
    let short = dir.path().join("short.index");
    fs::copy(&src, &short).unwrap();
    copy_truncated(&data, &dir.path().join("short.data-00000-of-00001"), 100);
    let snap = probe(&[dir.path().join("lone"), dir.path().join("short")]);
    let by = |p: &str| {
        snap.checkpoints
            .iter()
            .find(|c| c.path.ends_with(p))
            .unwrap()
            .tf
            .clone()
            .unwrap()
    };
    assert_eq!(by("lone").missing_shards.len(), 1);
    assert!(by("lone").missing_shards[0].ends_with("lone.data-00000-of-00001"));
    assert_eq!(by("short").short_shards.len(), 1);
    assert!(by("short").missing_shards.is_empty());
}

#[test]
fn tf_state_pointing_nowhere_is_a_fact() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("checkpoint"),
        "model_checkpoint_path: \"/output/ckpt/model.ckpt-5049\"\n",
    )
    .unwrap();
    let snap = probe(&[dir.path().to_path_buf()]);
    let st = snap.checkpoints[0].tf_state.clone().unwrap();
    assert!(!st.latest_exists);
    assert_eq!(
        st.latest_resolved.as_deref(),
        Some(dir.path().join("model.ckpt-5049").to_str().unwrap())
    );
}

#[test]
fn safetensors_hostile_header_length_and_truncated_data() {
    let dir = tempfile::tempdir().unwrap();
    let src = fs::read(fixture("model.safetensors")).unwrap();
    let hostile = dir.path().join("hostile.safetensors");
    let mut bytes = src.clone();
    bytes[..8].copy_from_slice(&(1u64 << 60).to_le_bytes());
    fs::write(&hostile, &bytes).unwrap();
    let err = error_for(&hostile);
    assert!(err.contains("beyond the file"), "{err}");

    let tiny = dir.path().join("tiny.safetensors");
    fs::write(&tiny, b"abc").unwrap();
    assert!(error_for(&tiny).contains("too short"));

    let notjson = dir.path().join("notjson.safetensors");
    let mut bytes = 4u64.to_le_bytes().to_vec();
    bytes.extend_from_slice(b"{{{{");
    fs::write(&notjson, &bytes).unwrap();
    assert!(error_for(&notjson).contains("JSON"));

    // Header intact, data cut: readable, with `truncated` set.
    let n = u64::from_le_bytes(src[..8].try_into().unwrap()) as usize;
    let short = dir.path().join("short.safetensors");
    copy_truncated(&fixture("model.safetensors"), &short, 8 + n + 4);
    let snap = probe(&[short]);
    assert!(snap.checkpoints[0].safetensors.as_ref().unwrap().truncated);
    assert!(snap.probe_errors.is_empty());
}

#[test]
fn torch_files_truncated_corrupt_and_impostors() {
    let dir = tempfile::tempdir().unwrap();
    let zip_cut = dir.path().join("zip_cut.pt");
    copy_truncated(&fixture("torch_state_dict.pt"), &zip_cut, 300);
    assert!(error_for(&zip_cut).contains("zip"));

    let legacy_cut = dir.path().join("legacy_cut.pt");
    copy_truncated(&fixture("torch_legacy.pt"), &legacy_cut, 40);
    assert!(error_for(&legacy_cut).contains("truncated"));

    // A legacy-looking pickle with the wrong magic number.
    let bad_magic = dir.path().join("bad_magic.pt");
    fs::write(&bad_magic, b"\x80\x02\x8a\x02\x01\x02.").unwrap();
    assert!(error_for(&bad_magic).contains("magic"));

    // A pickle whose BINUNICODE claims 2^32-1 bytes.
    let hostile = dir.path().join("hostile.pt");
    fs::write(&hostile, b"\x80\x02X\xff\xff\xff\xffabc").unwrap();
    assert!(error_for(&hostile).contains("truncated"));

    let lfs = dir.path().join("lfs.pt");
    fs::write(
        &lfs,
        "version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 123\n",
    )
    .unwrap();
    assert!(error_for(&lfs).contains("Git LFS"));

    let html = dir.path().join("page.pth");
    fs::write(&html, "<html><body>Not Found</body></html>").unwrap();
    assert!(error_for(&html).contains("unrecognised"));

    // A zip that is not a torch file.
    let other_zip = dir.path().join("other.pt");
    let keras = fs::read(fixture("keras_3.keras")).unwrap();
    fs::write(&other_zip, &keras).unwrap();
    let snap = probe(&[other_zip]);
    assert_eq!(
        snap.checkpoints[0].format, "keras-v3",
        "sniffed, not by name"
    );
}

#[test]
fn keras_h5_and_v3_truncated_and_hostile() {
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("cut.h5");
    copy_truncated(&fixture("tf_keras_2.h5"), &cut, 700);
    let _ = error_for(&cut);

    // Superblock v0 with the root object header address set to 2^60.
    let hostile = dir.path().join("hostile.h5");
    let mut bytes = fs::read(fixture("tf_keras_2.h5")).unwrap();
    assert_eq!(bytes[8], 0, "h5py writes superblock v0 by default");
    bytes[64..72].copy_from_slice(&(1u64 << 60).to_le_bytes());
    fs::write(&hostile, &bytes).unwrap();
    assert!(error_for(&hostile).contains("beyond the file"));

    let kcut = dir.path().join("cut.keras");
    copy_truncated(&fixture("keras_3.keras"), &kcut, 500);
    assert!(error_for(&kcut).contains("zip"));
}

#[test]
fn saved_model_garbage_and_special_files() {
    let dir = tempfile::tempdir().unwrap();
    let sm = dir.path().join("sm");
    fs::create_dir(&sm).unwrap();
    fs::write(
        sm.join("saved_model.pb"),
        [0x12, 0xff, 0xff, 0xff, 0xff, 0x0f, 1, 2],
    )
    .unwrap();
    let err = error_for(&sm);
    assert!(err.contains("saved_model.pb"), "{err}");

    // A FIFO named like a checkpoint: refused, never opened for reading (which would block).
    let fifo = dir.path().join("model.pt");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let err = error_for(&fifo);
    assert!(err.contains("FIFO"), "{err}");
}

#[test]
fn onnx_truncated_and_hostile() {
    let dir = tempfile::tempdir().unwrap();
    let src = fs::read(fixture("tiny.onnx")).unwrap();
    let cut = dir.path().join("cut.onnx");
    fs::write(&cut, &src[..src.len() / 2]).unwrap();
    assert!(error_for(&cut).contains("beyond the file"));

    // ir_version, then a graph field claiming 2^60 bytes.
    let hostile = dir.path().join("hostile.onnx");
    let mut bytes = vec![0x08, 0x07, 0x3a];
    bytes.extend(varint(1 << 60));
    fs::write(&hostile, &bytes).unwrap();
    assert!(error_for(&hostile).contains("claims"));

    let text = dir.path().join("text.onnx");
    fs::write(&text, "not a model").unwrap();
    let _ = error_for(&text);
}

#[test]
fn a_legacy_torch_pickle_larger_than_the_first_read_is_scanned_whole() {
    // The first three pickles (magic, protocol, sys_info) of a real legacy file, then an object
    // pickle of 2 MiB (past the first 1 MiB read) that references a global at its end.
    let src = fs::read(fixture("torch_legacy.pt")).unwrap();
    let mut pos = 0;
    for _ in 0..3 {
        pos += envdoctor::probe::checkpoint::torch::scan(&src[pos..])
            .unwrap()
            .end;
    }
    let mut bytes = src[..pos].to_vec();
    bytes.extend_from_slice(b"\x80\x02X");
    bytes.extend_from_slice(&(2u32 << 20).to_le_bytes());
    bytes.extend(std::iter::repeat_n(b'a', 2 << 20));
    bytes.extend_from_slice(b"0cpathlib\nPosixPath\n)R.");
    bytes.extend_from_slice(b"\x80\x02]q\x00.");
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big_legacy.pt");
    fs::write(&big, &bytes).unwrap();
    let snap = probe(std::slice::from_ref(&big));
    assert!(snap.probe_errors.is_empty(), "{:?}", snap.probe_errors);
    let t = snap.checkpoints[0].torch.clone().unwrap();
    assert_eq!(t.unsafe_globals, ["pathlib.PosixPath"]);
    assert!(t.needs_weights_only_false);
}
