//! Lock files: what the project pins (`uv.lock`, `pylock.toml`, `poetry.lock`, `pdm.lock`,
//! `Pipfile.lock`, `requirements*.txt`, conda `environment.yml`, `conda-lock.yml`, `pixi.lock`)
//! and how the job's environment differs from it.
//!
//! `locks[]` records every lock file the project has (its digest, so two machines built from
//! different locks show in `compare`); the one the job's interpreter is compared with (the
//! managing tool's own lock first) carries the comparison's counts. `lock_drift[]` is one entry
//! per drifted package, so rules (scope `lock`) report each with the file and line that pinned it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One lock or pinned-requirements file of the project.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LockFile {
    /// The file (a machine path).
    pub path: String,
    /// Which tool's format it is.
    pub format: LockFormat,
    /// SHA-256 of the file's bytes (hex): two machines with different digests were built from
    /// different locks.
    pub digest: String,
    /// The command that makes the environment match it (`uv sync`, `poetry install --sync`).
    pub sync_command: String,
    /// Whether the job's interpreter was compared with this file (one file per project: the
    /// managing tool's lock before exported requirements).
    #[serde(default)]
    pub compared: bool,
    /// Why the job's interpreter was not compared with it: its tool would not install into
    /// that interpreter (`uv sync` into a system Python, conda into a venv).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_compared: Option<String>,
    /// The interpreter it was compared with (`pythons[].path`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<String>,
    /// Packages it locks for that interpreter (markers, groups and platform applied).
    #[serde(default)]
    pub packages: usize,
    /// Why the lock is older than the project's declared dependencies (`uv lock --check`
    /// semantics: a declared requirement the lock did not record, or one it recorded that is
    /// gone); empty when it is current or cannot be told.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stale: Vec<String>,
    /// How many installed distributions it does not lock (frameworks and CUDA wheels are in
    /// `lock_drift[]` instead).
    #[serde(default)]
    pub unlocked_count: usize,
    /// The first few of those names, sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unlocked_first: Vec<String>,
}

/// The lock formats envdoctor reads.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum LockFormat {
    /// `uv.lock` (uv).
    #[default]
    Uv,
    /// `pylock.toml` / `pylock.*.toml` (PEP 751).
    Pylock,
    /// `poetry.lock` (Poetry).
    Poetry,
    /// `pdm.lock` (PDM).
    Pdm,
    /// `Pipfile.lock` (Pipenv).
    Pipfile,
    /// `requirements*.txt` / `constraints*.txt` (pip, pip-tools).
    Requirements,
    /// conda `environment.yml` (with its `pip:` section).
    CondaEnvironment,
    /// `conda-lock.yml`.
    CondaLock,
    /// `pixi.lock`.
    Pixi,
}

/// One package whose installed state differs from the lock.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LockDrift {
    /// Normalised name (PEP 503; a conda package's own name).
    pub name: String,
    /// The interpreter compared (`pythons[].path`).
    pub python: String,
    /// How it differs.
    pub kind: DriftKind,
    /// The lock file (`locks[].path`).
    pub lock: String,
    /// Where the lock pins it: `/proj/uv.lock:42` (absent for a package the lock lacks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned_at: Option<String>,
    /// The locked version (`2.6.0+cu124`), or the requirement when the file pins no exact
    /// version (`>=1.2`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locked: Option<String>,
    /// The installed version; absent when it is not installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installed: Option<String>,
    /// Where the lock takes it from: `index https://download.pytorch.org/whl/cu124`,
    /// `url …`, `path …`, `git …`, `editable …`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locked_source: Option<String>,
    /// Where the installed copy came from (its `direct_url.json`, else `index` and the
    /// installer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installed_source: Option<String>,
    /// Derived: the family (`torch`) when it is a framework, or `cuda` for an `nvidia-*` wheel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    /// The command that makes the environment match the lock.
    pub sync_command: String,
}

/// How an installed package differs from its lock.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum DriftKind {
    /// Locked, and not installed.
    #[default]
    NotInstalled,
    /// Installed at another version (local labels aside).
    Version,
    /// The same release with another local label (`+cpu` against `+cu124`).
    Local,
    /// The same version from another source (another index, a URL, a path, an editable
    /// checkout).
    Source,
    /// A framework or CUDA wheel installed that the lock does not name (other unlocked
    /// distributions are only counted in `locks[].unlocked_count`).
    Unlocked,
}

impl LockFile {
    /// Nothing to sort inside; kept for symmetry with the other sections.
    pub fn normalize(&mut self) {
        self.unlocked_first.sort();
        self.stale.sort();
        self.stale.dedup();
    }
}
