//! The Snapshot: every fact envdoctor collects about a machine, as one serde type.
//!
//! The Snapshot is the contract between probes (which fill it), rules (which read it as JSON
//! paths such as `pythons[].packages[].version`), `compare` (which diffs two of them) and users
//! (who save and attach them). Each section lives in its own submodule.
//!
//! Conventions every section follows:
//! - Field names are snake_case and stable; adding a field is compatible, renaming or removing
//!   one bumps [`SCHEMA_VERSION`].
//! - Facts that change from minute to minute (memory in use, processes, utilisation) live under
//!   a field named `live` (or the top-level `collected_at`); `compare` ignores them unless `--all`.
//! - Lists are sorted by a stable key before output ([`Snapshot::normalize`]), so the same machine
//!   gives the same bytes.
//! - Paths are machine paths (as the probed machine sees them), strings; a non-UTF-8 path is
//!   written with lossy replacement and a probe error naming it.

pub mod checkpoint;
pub mod cuda;
pub mod derived;
pub mod expect;
pub mod extensions;
pub mod family;
pub mod gpu;
pub mod host;
pub mod libs;
pub mod lock;
pub mod python;
pub mod tools;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use checkpoint::Checkpoint;
pub use cuda::Cuda;
pub use gpu::{Gpu, Nvml};
pub use host::Host;
pub use libs::{Framework, Library, RunningJob};
pub use lock::{LockDrift, LockFile};
pub use python::Python;

/// The version of the snapshot format this envdoctor writes. Readers refuse newer ones.
pub const SCHEMA_VERSION: u32 = 3;

/// Every fact about one machine at one time.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Snapshot {
    /// Format version of this document ([`SCHEMA_VERSION`] when written by this envdoctor).
    pub schema_version: u32,
    /// The envdoctor that wrote it.
    pub envdoctor_version: String,
    /// When the facts were collected (RFC 3339, UTC). Volatile: ignored by `compare`.
    #[serde(default)]
    pub collected_at: String,
    /// The host prefix that played `/` (`/` for the real machine).
    #[serde(default)]
    pub root: String,
    /// Operating system, kernel, CPU, memory, container.
    #[serde(default)]
    pub host: Host,
    /// Allowlisted environment variables that matter to training (secret-looking values redacted).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Every Python interpreter a job here could plausibly use.
    #[serde(default)]
    pub pythons: Vec<Python>,
    /// What each installed ML framework expects from the native world (CUDA, cuDNN, sonames).
    #[serde(default)]
    pub frameworks: Vec<Framework>,
    /// Each wanted shared library, resolved as the dynamic loader would.
    #[serde(default)]
    pub libraries: Vec<Library>,
    /// Running processes inspected with `--pid`: the libraries they really loaded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<RunningJob>,
    /// CUDA toolkits, cuDNN, the NVIDIA driver and the loader cache.
    #[serde(default)]
    pub cuda: Cuda,
    /// NVML itself: whether it loaded, driver and CUDA driver versions, CUDA_VISIBLE_DEVICES.
    #[serde(default)]
    pub nvml: Nvml,
    /// The GPUs NVML reports.
    #[serde(default)]
    pub gpus: Vec<Gpu>,
    /// Checkpoints found or named with `--checkpoint`.
    #[serde(default)]
    pub checkpoints: Vec<Checkpoint>,
    /// The project's lock files and pinned requirements, each with its digest; the one the
    /// job's interpreter was compared with carries the comparison's counts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub locks: Vec<LockFile>,
    /// Each package whose installed state differs from the compared lock (rules of scope
    /// `lock` read them one by one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lock_drift: Vec<LockDrift>,
    /// Probes that failed, timed out, or met bad input; each names the file when there is one.
    #[serde(default)]
    pub probe_errors: Vec<ProbeError>,
    /// What `check` was told to expect of this machine (`--expect-gpu`, profiling); not a probed
    /// fact, absent from saved snapshots.
    #[serde(default, skip_serializing_if = "expect::Expect::is_default")]
    pub expect: expect::Expect,
}

/// A probe's own failure, recorded as a fact.
#[derive(
    Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct ProbeError {
    /// The probe that met it (`python`, `libs`, `gpu`, ...).
    pub probe: String,
    /// The machine path concerned, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// What went wrong, for a person.
    pub message: String,
}

impl ProbeError {
    /// An error about a path.
    pub fn at(probe: &str, path: impl AsRef<std::path::Path>, message: impl Into<String>) -> Self {
        ProbeError {
            probe: probe.to_string(),
            path: Some(path.as_ref().to_string_lossy().into_owned()),
            message: message.into(),
        }
    }

    /// An error with no path.
    pub fn new(probe: &str, message: impl Into<String>) -> Self {
        ProbeError {
            probe: probe.to_string(),
            path: None,
            message: message.into(),
        }
    }

    /// From a [`crate::root::RootError`], which names its path.
    pub fn from_root(probe: &str, err: &crate::root::RootError) -> Self {
        ProbeError::at(probe, err.path(), err.to_string())
    }

    /// Whether this problem leaves the snapshot incomplete: a probe (or part of one) that
    /// failed, panicked or ran out of time, as opposed to one named file that could not be read
    /// (that file is a fact: "this checkpoint is corrupt"). Probe-level problems carry no path.
    pub fn is_incomplete(&self) -> bool {
        self.path.is_none()
    }
}

/// What a snapshot file is, said with every error reading one.
pub const LOAD_HINT: &str = "snapshots are the files `envdoctor snapshot -o FILE` writes";

/// Default cap on a snapshot file read by `check --from` and `compare` (a machine with
/// thousands of packages writes a few MiB).
pub const DEFAULT_MAX_INPUT_BYTES: u64 = 256 * 1024 * 1024;

/// The variable that overrides [`DEFAULT_MAX_INPUT_BYTES`] (in MiB).
pub const MAX_INPUT_VAR: &str = "ENVDOCTOR_MAX_SNAPSHOT_MIB";

/// The cap on a snapshot input: `$ENVDOCTOR_MAX_SNAPSHOT_MIB` MiB, else 256 MiB.
pub fn max_input_bytes() -> u64 {
    std::env::var(MAX_INPUT_VAR)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|&m| m > 0)
        .map_or(DEFAULT_MAX_INPUT_BYTES, |m| m.saturating_mul(1024 * 1024))
}

/// Read a snapshot input, refusing more than [`max_input_bytes`] with a message that says how
/// to raise the cap. Pipes (`--from /dev/stdin`) are read the same way, up to the cap.
pub fn read_capped(path: &std::path::Path) -> Result<Vec<u8>, crate::Error> {
    use std::io::Read;
    let what = path.display().to_string();
    let cap = max_input_bytes();
    let too_big = || {
        crate::Error::input(
            &what,
            format!(
                "larger than the {} MiB a snapshot may have; set {MAX_INPUT_VAR} to raise the cap",
                cap / (1024 * 1024)
            ),
        )
    };
    let f = std::fs::File::open(path).map_err(|e| {
        let msg = match e.kind() {
            std::io::ErrorKind::NotFound => "no such file".to_string(),
            _ => format!("cannot read: {e}"),
        };
        crate::Error::input(&what, msg)
    })?;
    let meta = f
        .metadata()
        .map_err(|e| crate::Error::input(&what, format!("cannot read: {e}")))?;
    if meta.is_dir() {
        return Err(crate::Error::input(
            &what,
            "is a directory, not a snapshot file",
        ));
    }
    if meta.is_file() && meta.len() > cap {
        return Err(too_big());
    }
    let mut bytes = Vec::with_capacity(if meta.is_file() {
        meta.len() as usize
    } else {
        0
    });
    f.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| crate::Error::input(&what, format!("cannot read: {e}")))?;
    if bytes.len() as u64 > cap {
        return Err(too_big());
    }
    Ok(bytes)
}

/// Top-level fields of snapshots read so far that this envdoctor does not know (see
/// [`take_ignored_fields`]).
static IGNORED_FIELDS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// The notes about unknown top-level fields left out of the snapshots read so far.
pub fn take_ignored_fields() -> Vec<String> {
    IGNORED_FIELDS
        .lock()
        .map(|mut l| std::mem::take(&mut *l))
        .unwrap_or_default()
}

/// Remove the top-level keys of `value` that [`Snapshot`] does not have (its JSON schema's
/// properties), returning them.
fn drop_unknown_fields(value: &mut serde_json::Value) -> Vec<String> {
    static KNOWN: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let known = KNOWN.get_or_init(|| {
        let schema = serde_json::to_value(schemars::schema_for!(Snapshot)).unwrap_or_default();
        schema
            .get("properties")
            .and_then(|p| p.as_object())
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default()
    });
    let Some(obj) = value.as_object_mut() else {
        return Vec::new();
    };
    if known.is_empty() {
        return Vec::new();
    }
    let unknown: Vec<String> = obj.keys().filter(|k| !known.contains(k)).cloned().collect();
    for k in &unknown {
        obj.remove(k);
    }
    unknown
}

/// Free a JSON view of a snapshot off the caller's path: freeing 20,000 packages' values takes
/// as long as evaluating the rules on them or flattening them for `compare` (the CLI usually
/// exits before the thread is done).
pub fn drop_json_off_path(view: serde_json::Value) {
    let _ = std::thread::Builder::new()
        .name("drop-json-view".into())
        .spawn(move || drop(view));
}

impl Snapshot {
    /// An empty snapshot stamped with this envdoctor's version and schema.
    pub fn empty() -> Self {
        Snapshot {
            schema_version: SCHEMA_VERSION,
            envdoctor_version: env!("CARGO_PKG_VERSION").to_string(),
            ..Default::default()
        }
    }

    /// Sort every list by its stable key so the same facts always serialise to the same bytes.
    pub fn normalize(&mut self) {
        for p in &mut self.pythons {
            p.normalize();
        }
        self.pythons.sort_by(|a, b| a.path.cmp(&b.path));
        for f in &mut self.frameworks {
            f.normalize();
        }
        self.frameworks.sort_by(|a, b| {
            (&a.python, &a.name, &a.location).cmp(&(&b.python, &b.name, &b.location))
        });
        for l in &mut self.libraries {
            l.normalize();
        }
        self.libraries.sort_by(|a, b| {
            (&a.python, &a.soname, &a.requester).cmp(&(&b.python, &b.soname, &b.requester))
        });
        for j in &mut self.jobs {
            j.normalize();
        }
        self.jobs.sort_by_key(|j| j.pid);
        self.cuda.normalize();
        self.gpus.sort_by_key(|g| g.index);
        for g in &mut self.gpus {
            g.normalize();
        }
        self.checkpoints.sort_by(|a, b| a.path.cmp(&b.path));
        for l in &mut self.locks {
            l.normalize();
        }
        self.locks.sort_by(|a, b| a.path.cmp(&b.path));
        self.lock_drift.sort_by(|a, b| {
            (&a.lock, &a.python, &a.name, a.kind).cmp(&(&b.lock, &b.python, &b.name, b.kind))
        });
        self.probe_errors.sort();
        self.probe_errors.dedup();
    }

    /// Serialise as pretty JSON with a trailing newline.
    pub fn to_json(&self) -> String {
        // Serialising plain data structs with string keys cannot fail.
        let mut s = serde_json::to_string_pretty(self).unwrap_or_else(|e| {
            format!("{{\"error\": \"envdoctor could not serialise the snapshot: {e}\"}}")
        });
        s.push('\n');
        s
    }

    /// Write it as pretty JSON with a trailing newline (the same bytes as [`Snapshot::to_json`])
    /// without building the whole text in memory.
    pub fn write_json<W: std::io::Write>(&self, mut w: W) -> std::io::Result<()> {
        serde_json::to_writer_pretty(&mut w, self).map_err(std::io::Error::from)?;
        w.write_all(b"\n")?;
        w.flush()
    }

    /// The one door for a snapshot file (`check --from`, `compare`, `diagnose --from`): at most
    /// [`max_input_bytes`] of it read, the typed parse first (no intermediate JSON tree, so
    /// memory stays near the file's size), [`Snapshot::from_json`]'s messages when it fails, the
    /// derived facts an older snapshot lacks filled in, and every error but "newer than this
    /// envdoctor" carrying the hint that says what a snapshot file is.
    pub fn load(path: &std::path::Path) -> Result<Snapshot, crate::Error> {
        let what = path.display().to_string();
        let hint = |e: crate::Error| {
            if e.message.contains("newer than") {
                e
            } else {
                e.with_hint(LOAD_HINT)
            }
        };
        let bytes = read_capped(path).map_err(hint)?;
        let text = std::str::from_utf8(&bytes).map_err(|_| {
            hint(crate::Error::input(
                &what,
                "not UTF-8 text, so not a snapshot",
            ))
        })?;
        Snapshot::from_json_fast(text, &what).map_err(hint)
    }

    /// [`Snapshot::from_json`] that tries the typed parse first.
    pub fn from_json_fast(text: &str, what: &str) -> Result<Snapshot, crate::Error> {
        if let Ok(mut s) = serde_json::from_str::<Snapshot>(text) {
            if (1..=SCHEMA_VERSION).contains(&s.schema_version) {
                s.derive_missing();
                return Ok(s);
            }
        }
        Snapshot::from_json(text, what)
    }

    /// Parse a snapshot, refusing ones written by a newer envdoctor. `what` names the source
    /// (a file path) in messages.
    pub fn from_json(text: &str, what: &str) -> Result<Snapshot, crate::Error> {
        if text.trim().is_empty() {
            return Err(crate::Error::input(
                what,
                "the file is empty, not a snapshot",
            ));
        }
        let value: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| crate::Error::input(what, format!("not valid JSON: {e}")))?;
        let version = value
            .get("schema_version")
            .and_then(|v| v.as_u64())
            .ok_or_else(|| {
                crate::Error::input(
                    what,
                    "not an envdoctor snapshot (no numeric `schema_version` field)",
                )
            })?;
        if version > u64::from(SCHEMA_VERSION) {
            let writer = value
                .get("envdoctor_version")
                .and_then(|v| v.as_str())
                .unwrap_or("unknown");
            return Err(crate::Error::input(
                what,
                format!(
                    "snapshot schema_version {version} (written by envdoctor {writer}) is newer than \
                     this envdoctor {} understands (schema_version {SCHEMA_VERSION}); upgrade envdoctor",
                    env!("CARGO_PKG_VERSION")
                ),
            ));
        }
        if version == 0 {
            return Err(crate::Error::input(
                what,
                "schema_version 0 is not a valid snapshot",
            ));
        }
        let mut value = value;
        // Within a schema version an added top-level field is additive: an older reader
        // leaves it out (and says so at -v) instead of refusing the snapshot.
        for k in drop_unknown_fields(&mut value) {
            if let Ok(mut l) = IGNORED_FIELDS.lock() {
                l.push(format!(
                    "{what}: field `{k}` is not known to this envdoctor (written by a newer one?); ignored"
                ));
            }
        }
        let mut snap: Snapshot = serde_json::from_value(value)
            .map_err(|e| crate::Error::input(what, format!("not a valid snapshot: {e}")))?;
        snap.derive_missing();
        Ok(snap)
    }

    /// Fill the derived facts a snapshot from an older envdoctor (or written by hand) lacks, so
    /// rules that read them judge it as they judge a fresh one: each package's `family`, and,
    /// when no interpreter has roles, the roles and IDE drift.
    fn derive_missing(&mut self) {
        use self::derived;
        for py in &mut self.pythons {
            for s in &mut py.sources {
                s.derive_path_fields();
            }
            for p in &mut py.packages {
                if p.family.is_none() {
                    p.family = family::family_of(&p.name);
                }
                if p.built_for_cudnn.is_none() {
                    p.built_for_cudnn = p.local.as_deref().and_then(derived::cudnn_of_label);
                }
            }
        }
        if self.pythons.iter().all(|p| p.roles.is_empty()) {
            derived::assign_roles(&mut self.pythons);
            derived::ide_drift(&mut self.pythons);
        }
    }
}

/// The JSON Schema of [`Snapshot`], as checked in at `schema/snapshot.schema.json`.
pub fn json_schema() -> String {
    crate::schema::render::<Snapshot>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checked_in_schema_is_current() {
        crate::schema::assert_current("snapshot.schema.json", &json_schema());
    }

    #[test]
    fn round_trips_and_refuses_newer_schemas() {
        let mut s = Snapshot::empty();
        s.probe_errors.push(ProbeError::new("gpu", "no NVML"));
        let text = s.to_json();
        let mut streamed = Vec::new();
        s.write_json(&mut streamed).unwrap();
        assert_eq!(streamed, text.as_bytes());
        assert_eq!(Snapshot::from_json(&text, "a.json").unwrap(), s);
        let newer = text.replace(
            &format!("\"schema_version\": {SCHEMA_VERSION}"),
            "\"schema_version\": 99",
        );
        let err = Snapshot::from_json(&newer, "b.json")
            .unwrap_err()
            .to_string();
        assert!(err.contains("b.json") && err.contains("99"), "{err}");
        let err = Snapshot::from_json("", "c.json").unwrap_err().to_string();
        assert!(err.contains("c.json") && err.contains("empty"), "{err}");
        let err = Snapshot::from_json("{\"a\": 1}", "d.json")
            .unwrap_err()
            .to_string();
        assert!(err.contains("not an envdoctor snapshot"), "{err}");
        let err = Snapshot::from_json("{\"schema_version\": 1, ", "e.json")
            .unwrap_err()
            .to_string();
        assert!(err.contains("not valid JSON"), "{err}");
    }
}
