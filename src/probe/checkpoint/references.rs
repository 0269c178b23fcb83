//! What a serialized file names: the `module.name` references of its pickles (plain pickles,
//! joblib files, torch checkpoints) and of its Keras config, as
//! [`References`](crate::snapshot::checkpoint::References). Only the file is read here; the
//! `serialized` probe resolves the names against the job's interpreter.
//!
//! Plain pickles and joblib files are walked by [`super::pickle`] from a bounded prefix
//! ([`super::torch::MAX_PICKLE`]); a joblib file compressed with zlib or gzip (`compress=` of
//! `joblib.dump`) is inflated on the fly, bounded the same way. Other compressors (lz4, xz, bz2)
//! are recorded as `incomplete`, not read.

use super::pickle::{self, Scan};
use super::torch::MAX_PICKLE;
use crate::root::Root;
use crate::snapshot::checkpoint::References;
use std::collections::BTreeSet;
use std::io::Read;
use std::path::Path;
use std::time::Instant;

/// References from the pickle scans of one file.
pub fn from_scans(scans: &[Scan], incomplete: Option<String>) -> References {
    let mut globals = BTreeSet::new();
    let mut r = References {
        source: "pickle".into(),
        incomplete,
        ..Default::default()
    };
    for s in scans {
        globals.extend(s.globals.iter().cloned());
        r.pickle_protocol = r.pickle_protocol.max(s.protocol);
        if r.sklearn_version.is_none() {
            r.sklearn_version.clone_from(&s.sklearn_version);
        }
    }
    fill_globals(&mut r, globals);
    r
}

/// References from a list of globals (a torch checkpoint's, already scanned).
pub fn from_globals(globals: &[String], protocol: Option<u8>) -> References {
    let mut r = References {
        source: "pickle".into(),
        pickle_protocol: protocol,
        ..Default::default()
    };
    fill_globals(&mut r, globals.iter().cloned().collect());
    r
}

/// Keep the first [`References::KEPT`] globals and note NumPy's core module path.
fn fill_globals(r: &mut References, globals: BTreeSet<String>) {
    // `<unresolved STACK_GLOBAL>` is the walker's placeholder, not a name.
    let globals: Vec<String> = globals
        .into_iter()
        .filter(|g| !g.starts_with('<'))
        .collect();
    let mut core = BTreeSet::new();
    for g in &globals {
        for m in ["numpy._core", "numpy.core"] {
            if g.strip_prefix(m).is_some_and(|rest| rest.starts_with('.')) {
                core.insert(m.to_string());
            }
        }
    }
    r.numpy_core = core.into_iter().collect();
    r.globals_omitted = globals.len().saturating_sub(References::KEPT);
    r.globals = globals.into_iter().take(References::KEPT).collect();
}

/// The custom objects a Keras config names by module: every `{"module", "class_name"}` whose
/// module is not Keras' own (`keras…`, `tf_keras…`, `tensorflow…`: Keras resolves those from its
/// registry). Keras 3 imports such a module when the class is not registered.
pub fn from_keras_config(config: &serde_json::Value) -> Option<References> {
    let mut found = BTreeSet::new();
    keras_walk(config, &mut found, 0);
    if found.is_empty() {
        return None;
    }
    let mut r = References {
        source: "keras-config".into(),
        ..Default::default()
    };
    fill_globals(&mut r, found);
    Some(r)
}

fn keras_walk(v: &serde_json::Value, out: &mut BTreeSet<String>, depth: usize) {
    if depth > 64 || out.len() > References::KEPT {
        return;
    }
    match v {
        serde_json::Value::Object(map) => {
            let module = map.get("module").and_then(|m| m.as_str());
            let class = map.get("class_name").and_then(|c| c.as_str());
            if let (Some(m), Some(c)) = (module, class) {
                let own = ["keras", "tf_keras", "tensorflow"]
                    .iter()
                    .any(|k| m == *k || m.starts_with(&format!("{k}.")));
                if !own && !m.is_empty() {
                    out.insert(format!("{m}.{c}"));
                }
            }
            for x in map.values() {
                keras_walk(x, out, depth + 1);
            }
        }
        serde_json::Value::Array(items) => {
            for x in items {
                keras_walk(x, out, depth + 1);
            }
        }
        _ => {}
    }
}

/// How a joblib file was compressed, from its first bytes (joblib's own magic numbers).
fn compressor(head: &[u8]) -> Option<&'static str> {
    [
        (&b"\x78"[..], "zlib"),
        (b"\x1f\x8b", "gzip"),
        (b"BZ", "bz2"),
        (b"\xfd7zXZ", "xz"),
        (b"]\x00\x00", "lzma"),
        (b"\x04\x22\x4d\x18", "lz4"),
    ]
    .into_iter()
    .find(|(magic, _)| head.starts_with(magic))
    .map(|(_, name)| name)
}

/// True when the file is compressed in a way joblib writes (only worth asking of `.joblib`).
pub fn is_compressed_joblib(head: &[u8]) -> bool {
    compressor(head).is_some()
}

/// Read up to [`MAX_PICKLE`] bytes of the pickle stream of `path` (inflated when joblib
/// compressed it); `Err` names what could not be read, `Ok((bytes, note))` carries why the
/// stream may be cut short.
fn pickle_bytes(
    root: &Root,
    path: &Path,
    head: &[u8],
) -> Result<(Vec<u8>, Option<String>), String> {
    let file = root.open(path).map_err(|e| e.to_string())?;
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    let mut buf = Vec::new();
    let read = |r: &mut dyn Read, buf: &mut Vec<u8>| {
        r.take(MAX_PICKLE)
            .read_to_end(buf)
            .map_err(|e| format!("{}: {e}", path.display()))
    };
    let note = match compressor(head) {
        Some("zlib") => {
            read(&mut flate2::read::ZlibDecoder::new(file), &mut buf)?;
            None
        }
        Some("gzip") => {
            read(&mut flate2::read::GzDecoder::new(file), &mut buf)?;
            None
        }
        Some(other) => {
            return Ok((
                Vec::new(),
                Some(format!("compressed with {other}: not read")),
            ))
        }
        None => {
            read(&mut { file }, &mut buf)?;
            (len > MAX_PICKLE).then(|| format!("only the first {MAX_PICKLE} bytes were read"))
        }
    };
    Ok((buf, note))
}

/// Walk a plain pickle or joblib file. `Err` when it is no pickle at all.
pub fn inspect_pickle(
    root: &Root,
    path: &Path,
    head: &[u8],
    deadline: Instant,
) -> Result<References, String> {
    let (buf, note) = pickle_bytes(root, path, head)?;
    if buf.is_empty() {
        return Ok(from_scans(&[], note));
    }
    let (scan, stop) = pickle::scan_with(&buf, Some(deadline));
    if scan.globals.is_empty() && scan.protocol.is_none() {
        if let Some(e) = stop {
            return Err(e);
        }
    }
    Ok(from_scans(&[scan], stop.or(note)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keras_custom_modules_are_kept_and_keras_own_are_not() {
        let cfg = serde_json::json!({"module": "keras", "class_name": "Functional", "config": {
        "layers": [
            {"module": "keras.layers", "class_name": "Dense"},
            {"module": "trainlib.models", "class_name": "Scale", "registered_name": "Scale"},
            {"module": "tf_keras.src.engine", "class_name": "X"},
        ]}});
        let r = from_keras_config(&cfg).unwrap();
        assert_eq!(r.globals, ["trainlib.models.Scale"]);
        assert_eq!(r.source, "keras-config");
        assert!(from_keras_config(
            &serde_json::json!({"module": "keras", "class_name": "Sequential"})
        )
        .is_none());
    }

    #[test]
    fn numpy_core_paths_are_told_apart() {
        let r = from_globals(
            &[
                "numpy._core.numeric._frombuffer".into(),
                "numpy.dtype".into(),
                "numpy.core_x.y".into(),
            ],
            Some(5),
        );
        assert_eq!(r.numpy_core, ["numpy._core"]);
        assert_eq!(r.pickle_protocol, Some(5));
    }
}
