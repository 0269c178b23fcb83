//! The conda side of a comparison: a conda prefix's `conda-meta/*.json` records (conda's
//! `PrefixRecord`: `name`, `version`, `build`, `channel`) against a lock's conda entries.
//! A pinned version (conda-lock, pixi) must be the record's exactly, and a pinned build the
//! record's build (another build of the same version is `local` drift: the CUDA and CPU
//! builds of one pytorch differ only there); a match spec (`environment.yml`) must be met; a
//! channel must be the record's channel. Records the lock does not name are counted (a
//! framework or CUDA package is reported), except against an environment file, which names
//! only what the user asked for.

use super::drift::Compared;
use super::model::{Entry, Src};
use crate::root::{Root, RootError};
use crate::snapshot::lock::{DriftKind, LockDrift};
use crate::snapshot::python::Python;
use serde::Deserialize;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Largest record read (a record lists every file of its package).
pub const MAX_RECORD: u64 = 32 * 1024 * 1024;
/// Most record bytes read per environment.
pub const MAX_BYTES: u64 = 256 * 1024 * 1024;

/// One installed conda package.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
pub struct Record {
    /// Its name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// Its build string.
    #[serde(default)]
    pub build: String,
    /// The channel it came from (a URL or a name).
    #[serde(default)]
    pub channel: String,
}

/// The conda prefix of `py`, when it is a conda (or pixi) environment.
pub fn prefix(root: &Root, py: &Python) -> Option<PathBuf> {
    let p = PathBuf::from(py.prefix.as_deref()?);
    root.is_dir(&p.join("conda-meta")).then_some(p)
}

/// Each record file of `prefix`'s `conda-meta/` (`*.json`, in name order) handed to `each` with
/// its bytes or why they could not be read: each file read up to [`MAX_RECORD`] bytes, the walk
/// stopped once more than [`MAX_BYTES`] were read. `Err`: the directory cannot be listed;
/// `Ok(true)`: the walk was stopped there (the records left are not read). The lock comparison
/// ([`records`]) and `python/owner.rs` both read conda-meta through it.
pub fn each_record(
    root: &Root,
    prefix: &Path,
    mut each: impl FnMut(&Path, Result<Vec<u8>, RootError>),
) -> Result<bool, RootError> {
    let mut files = root.read_dir(&prefix.join("conda-meta"))?;
    files.retain(|f| f.extension().is_some_and(|e| e == "json"));
    files.sort();
    let mut spent = 0u64;
    for f in files {
        if spent > MAX_BYTES {
            return Ok(true);
        }
        let read = root.read_limited(&f, MAX_RECORD);
        if let Ok(b) = &read {
            spent += b.len() as u64;
        }
        each(&f, read);
    }
    Ok(false)
}

/// The records of `prefix`'s `conda-meta/`; a record that cannot be read is a problem named
/// with its file, and the others are kept.
pub fn records(root: &Root, prefix: &Path) -> (Vec<Record>, Vec<String>) {
    let meta = prefix.join("conda-meta");
    let mut problems = Vec::new();
    let mut out = Vec::new();
    let walk = each_record(root, prefix, |f, read| match read {
        Ok(b) => match serde_json::from_slice::<Record>(&b) {
            Ok(r) => out.push(r),
            Err(e) => problems.push(format!("{}: not a conda-meta record: {e}", f.display())),
        },
        Err(e) => problems.push(e.to_string()),
    });
    match walk {
        Err(e) => return (Vec::new(), vec![format!("{}: {e}", meta.display())]),
        Ok(true) => problems.push(format!(
            "{}: more conda records than envdoctor reads; the rest were not compared",
            meta.display()
        )),
        Ok(false) => {}
    }
    (out, problems)
}

/// `conda-forge` for `https://conda.anaconda.org/conda-forge/linux-64`,
/// `https://prefix.dev/conda-forge/` or `conda-forge`.
pub fn channel_name(c: &str) -> &str {
    const SUBDIRS: &[&str] = &[
        "noarch",
        "linux-64",
        "linux-aarch64",
        "linux-ppc64le",
        "linux-s390x",
        "linux-32",
        "osx-64",
        "osx-arm64",
        "win-64",
        "win-arm64",
        "win-32",
    ];
    let c = c.trim_end_matches('/');
    let c = match c.rsplit_once('/') {
        Some((dir, last)) if SUBDIRS.contains(&last) => dir,
        _ => c,
    };
    c.rsplit('/').next().unwrap_or(c)
}

/// What the comparison is against.
pub struct Against<'a> {
    /// The lock file.
    pub lock: &'a str,
    /// Its sync command.
    pub sync: &'a str,
    /// Whether records the lock does not name are reported (not for an environment file).
    pub count_unlocked: bool,
}

/// The conda `entries` of a lock against `records` (the environment of `py`), added to `out`.
pub fn compare(
    against: &Against,
    entries: &[Entry],
    records: &[Record],
    py: &Python,
    out: &mut Compared,
) {
    let by_name: HashMap<&str, &Record> = records.iter().map(|r| (r.name.as_str(), r)).collect();
    let mut locked = HashSet::new();
    for e in entries.iter().filter(|e| e.conda) {
        locked.insert(e.name.as_str());
        let r = by_name.get(e.name.as_str()).copied();
        let Some(kind) = differs(e, r) else {
            continue;
        };
        let shown = |v: &str, b: &str| {
            if kind == DriftKind::Local && !b.is_empty() {
                format!("{v} {b}")
            } else {
                v.to_string()
            }
        };
        out.drift.push(LockDrift {
            name: e.name.clone(),
            python: py.path.clone(),
            kind,
            lock: against.lock.to_string(),
            pinned_at: Some(format!(
                "{}:{}",
                e.file.as_deref().unwrap_or(against.lock),
                e.line
            )),
            locked: e
                .version
                .as_deref()
                .map(|v| shown(v, e.build.as_deref().unwrap_or("")))
                .or_else(|| e.spec.clone()),
            installed: r.map(|r| shown(&r.version, &r.build)),
            locked_source: e.source.describe().map(|s| format!("conda {s}")),
            installed_source: r.map(|r| format!("conda channel {}", channel_name(&r.channel))),
            family: family(&e.name),
            sync_command: against.sync.to_string(),
        });
    }
    if !against.count_unlocked {
        return;
    }
    for r in records {
        if locked.contains(r.name.as_str()) {
            continue;
        }
        match family(&r.name) {
            Some(f) => out.drift.push(LockDrift {
                name: r.name.clone(),
                python: py.path.clone(),
                kind: DriftKind::Unlocked,
                lock: against.lock.to_string(),
                installed: Some(r.version.clone()),
                installed_source: Some(format!("conda channel {}", channel_name(&r.channel))),
                family: Some(f),
                sync_command: against.sync.to_string(),
                ..LockDrift::default()
            }),
            None => out.unlocked.push(r.name.clone()),
        }
    }
}

/// The family of a conda package: a framework (`pytorch` is torch's), or `cuda` for the
/// CUDA toolkit's packages.
fn family(name: &str) -> Option<String> {
    let pypi = match name {
        "pytorch" | "pytorch-gpu" | "pytorch-cpu" => "torch",
        "tensorflow-gpu" | "tensorflow-cpu" => "tensorflow",
        "jaxlib" => "jax",
        other => other,
    };
    crate::snapshot::family::family(pypi)
        .map(str::to_string)
        .or_else(|| {
            (name.starts_with("cuda-") || name.starts_with("libcu") || name == "cudatoolkit")
                .then(|| "cuda".to_string())
        })
}

fn differs(e: &Entry, r: Option<&Record>) -> Option<DriftKind> {
    let Some(r) = r else {
        return Some(DriftKind::NotInstalled);
    };
    if let Some(v) = &e.version {
        if v != &r.version {
            return Some(DriftKind::Version);
        }
    } else if let Some(spec) = &e.spec {
        if super::conda::version_matches(spec, &r.version) == Some(false) {
            return Some(DriftKind::Version);
        }
    }
    if let Some(b) = &e.build {
        if !glob(b, &r.build) {
            return Some(DriftKind::Local);
        }
    }
    match &e.source {
        Src::Index(Some(c))
            if !r.channel.is_empty() && channel_name(c) != channel_name(&r.channel) =>
        {
            Some(DriftKind::Source)
        }
        _ => None,
    }
}

/// A conda build glob (`*cuda*`, `py311*`, an exact build).
fn glob(pattern: &str, s: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == s;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !s.starts_with(first) || s.len() < first.len() + last.len() || !s.ends_with(last) {
        return false;
    }
    let mut rest = &s[first.len()..s.len() - last.len()];
    for mid in &parts[1..parts.len() - 1] {
        match rest.find(mid) {
            Some(i) => rest = &rest[i + mid.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(name: &str, version: &str, build: &str, channel: &str) -> Record {
        Record {
            name: name.into(),
            version: version.into(),
            build: build.into(),
            channel: channel.into(),
        }
    }

    #[test]
    fn channels_and_globs() {
        assert_eq!(
            channel_name("https://conda.anaconda.org/conda-forge/linux-64"),
            "conda-forge"
        );
        assert_eq!(
            channel_name("https://conda.anaconda.org/conda-forge/"),
            "conda-forge"
        );
        assert_eq!(
            channel_name("https://prefix.dev/conda-forge/noarch"),
            "conda-forge"
        );
        assert_eq!(channel_name("pkgs/main"), "main");
        assert_eq!(
            channel_name("https://repo.anaconda.com/pkgs/main/linux-aarch64"),
            "main"
        );
        assert!(glob("*cuda*", "py3.11_cuda12.1_cudnn8_0") && !glob("*cuda*", "py3.11_cpu_0"));
        assert!(glob("py311*", "py311h64a7726_0") && glob("h1_0", "h1_0") && !glob("h1_0", "h1_1"));
    }

    #[test]
    fn each_kind_of_conda_drift() {
        let py = Python {
            path: "/opt/conda/envs/ml/bin/python".into(),
            ..Python::default()
        };
        let forge = "https://conda.anaconda.org/conda-forge/linux-64";
        let records = vec![
            rec("python", "3.11.7", "hab00c5b_0_cpython", forge),
            rec("numpy", "1.26.3", "py311h64a7726_0", forge),
            rec("pytorch", "2.6.0", "cpu_py311_0", forge),
            rec("openssl", "3.2.1", "hd590300_1", "pkgs/main"),
            rec("cuda-cudart", "12.4.127", "0", forge),
            rec("zlib", "1.3.1", "0", forge),
        ];
        let e = |n: &str, v: &str, b: &str| Entry {
            name: n.into(),
            version: Some(v.into()),
            build: Some(b.into()),
            line: 9,
            conda: true,
            source: Src::Index(Some("https://conda.anaconda.org/conda-forge".into())),
            ..Entry::default()
        };
        let entries = vec![
            e("python", "3.11.7", "hab00c5b_0_cpython"),
            e("numpy", "1.26.4", "py311h64a7726_0"),
            e("pytorch", "2.6.0", "cuda124_py311_0"),
            e("openssl", "3.2.1", "hd590300_1"),
            e("libffi", "3.4.2", "h7f98852_5"),
        ];
        let against = Against {
            lock: "/p/pixi.lock",
            sync: "pixi install",
            count_unlocked: true,
        };
        let mut out = Compared::default();
        compare(&against, &entries, &records, &py, &mut out);
        let got: Vec<(&str, DriftKind)> = out
            .drift
            .iter()
            .map(|d| (d.name.as_str(), d.kind))
            .collect();
        assert_eq!(
            got,
            [
                ("numpy", DriftKind::Version),
                ("pytorch", DriftKind::Local),
                ("openssl", DriftKind::Source),
                ("libffi", DriftKind::NotInstalled),
                ("cuda-cudart", DriftKind::Unlocked),
            ]
        );
        assert_eq!(out.unlocked, ["zlib"]);
        let t = &out.drift[1];
        assert_eq!(t.locked.as_deref(), Some("2.6.0 cuda124_py311_0"));
        assert_eq!(t.installed.as_deref(), Some("2.6.0 cpu_py311_0"));
        assert_eq!(t.family.as_deref(), Some("torch"));
        assert_eq!(
            out.drift[2].installed_source.as_deref(),
            Some("conda channel main")
        );
        // The records as the lock has them: quiet.
        let synced: Vec<Record> = entries
            .iter()
            .map(|x| {
                rec(
                    &x.name,
                    x.version.as_deref().unwrap(),
                    x.build.as_deref().unwrap(),
                    forge,
                )
            })
            .collect();
        let mut out = Compared::default();
        compare(&against, &entries, &synced, &py, &mut out);
        assert!(out.drift.is_empty() && out.unlocked.is_empty(), "{out:?}");
    }

    #[test]
    fn an_environment_files_specs_are_met_by_any_matching_record() {
        let py = Python {
            path: "/opt/conda/envs/ml/bin/python".into(),
            ..Python::default()
        };
        let forge = "https://conda.anaconda.org/conda-forge/linux-64";
        let records = vec![
            rec("numpy", "1.26.3", "py311h64a7726_0", forge),
            rec("zlib", "1.3.1", "0", forge),
        ];
        let env = Against {
            lock: "/p/environment.yml",
            sync: "conda env update --file environment.yml --prune",
            count_unlocked: false,
        };
        let spec = Entry {
            name: "numpy".into(),
            spec: Some(">=1.26,<2".into()),
            conda: true,
            ..Entry::default()
        };
        let mut out = Compared::default();
        compare(&env, std::slice::from_ref(&spec), &records, &py, &mut out);
        assert!(out.drift.is_empty() && out.unlocked.is_empty(), "{out:?}");
        let old = Entry {
            spec: Some("2.*".into()),
            ..spec
        };
        compare(&env, &[old], &records, &py, &mut out);
        assert_eq!(out.drift[0].kind, DriftKind::Version);
        assert_eq!(out.drift[0].locked.as_deref(), Some("2.*"));
    }
}
