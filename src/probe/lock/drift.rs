//! The job's environment against a lock: one [`LockDrift`] per locked package that is missing,
//! at another version, with another local label or from another source, and per framework or
//! CUDA wheel installed that the lock does not name; other unlocked distributions are counted.
//! Where an installed copy came from is read from its `direct_url.json` (PEP 610: a URL, a
//! local path, a VCS checkout, an editable directory); without one it came from an index.

use super::model::{Entry, Src};
use crate::root::Root;
use crate::snapshot::lock::{DriftKind, LockDrift};
use crate::snapshot::python::{Package, Python, SysPathOrigin};
use pep440_rs::Version;
use std::collections::HashSet;
use std::path::Path;
use std::str::FromStr;

/// Installed distributions every tool leaves alone (seeded by `venv`, kept by `pip-sync`).
const SEEDED: &[&str] = &["pip", "setuptools", "wheel", "distribute"];

/// How many unlocked names a lock file spells out.
pub const UNLOCKED_NAMED: usize = 5;

/// What a comparison found.
#[derive(Debug, Default)]
pub struct Compared {
    /// One per drifted package.
    pub drift: Vec<LockDrift>,
    /// Unlocked distributions that are not frameworks or CUDA wheels, sorted.
    pub unlocked: Vec<String>,
}

/// The lock file `lock`'s entries against `py` (the job's interpreter).
pub fn compare(root: &Root, lock: &str, sync: &str, entries: &[Entry], py: &Python) -> Compared {
    let mut out = Compared::default();
    let mut locked: HashSet<&str> = HashSet::new();
    for e in entries.iter().filter(|e| !e.conda) {
        locked.insert(e.name.as_str());
        let installed = py.package(&e.name);
        let Some(kind) = differs(root, e, installed) else {
            continue;
        };
        let file = e.file.as_deref().unwrap_or(lock);
        out.drift.push(LockDrift {
            name: e.name.clone(),
            python: py.path.clone(),
            kind,
            lock: lock.to_string(),
            pinned_at: Some(format!("{file}:{}", e.line)),
            locked: e.version.clone().or_else(|| e.spec.clone()),
            installed: installed.map(|p| p.version.clone()),
            locked_source: e.source.describe(),
            installed_source: installed.and_then(|p| installed_source(root, p).describe()),
            family: family(&e.name),
            sync_command: sync.to_string(),
        });
    }
    let own: HashSet<&str> = py
        .sys_path
        .iter()
        .filter(|s| s.origin == SysPathOrigin::Site)
        .map(|s| s.path.as_str())
        .collect();
    let mut seen: HashSet<&str> = HashSet::new();
    for p in &py.packages {
        if !own.contains(p.location.as_str())
            || locked.contains(p.name.as_str())
            || SEEDED.contains(&p.name.as_str())
            // conda's own (compared through conda-meta/ when the lock has conda packages).
            || p.installer.as_deref() == Some("conda")
            || !seen.insert(p.name.as_str())
        {
            continue;
        }
        match family(&p.name) {
            Some(f) => out.drift.push(LockDrift {
                name: p.name.clone(),
                python: py.path.clone(),
                kind: DriftKind::Unlocked,
                lock: lock.to_string(),
                installed: Some(p.version.clone()),
                installed_source: installed_source(root, p).describe(),
                family: Some(f),
                sync_command: sync.to_string(),
                ..LockDrift::default()
            }),
            None => out.unlocked.push(p.name.clone()),
        }
    }
    out.unlocked.sort();
    out
}

/// The family a drift names: a framework's, or `cuda` for an NVIDIA wheel.
fn family(name: &str) -> Option<String> {
    crate::snapshot::family::family(name)
        .map(str::to_string)
        .or_else(|| name.starts_with("nvidia-").then(|| "cuda".to_string()))
}

/// How the installed copy differs from the entry, if it does.
fn differs(root: &Root, e: &Entry, installed: Option<&Package>) -> Option<DriftKind> {
    let Some(p) = installed else {
        return (!e.constraint).then_some(DriftKind::NotInstalled);
    };
    if let Some(v) = &e.version {
        match (Version::from_str(v), Version::from_str(&p.version)) {
            (Ok(want), Ok(have)) => {
                if want.clone().without_local() != have.clone().without_local() {
                    return Some(DriftKind::Version);
                }
                if want.local() != have.local() {
                    return Some(DriftKind::Local);
                }
            }
            _ if v != &p.version => return Some(DriftKind::Version),
            _ => {}
        }
    } else if let Some(spec) = &e.spec {
        let ok = match (
            pep440_rs::VersionSpecifiers::from_str(spec),
            Version::from_str(&p.version),
        ) {
            (Ok(s), Ok(v)) => s.contains(&v.without_local()),
            _ => true,
        };
        if !ok {
            return Some(DriftKind::Version);
        }
    }
    (!same_source(&e.source, &installed_source(root, p))).then_some(DriftKind::Source)
}

/// Whether an installed copy's source is the one the lock names. Index installs record no
/// index (the local label tells a cu121 build from a cu124 one), so any index matches any.
fn same_source(locked: &Src, installed: &Src) -> bool {
    let trim = |u: &str| {
        u.split('#')
            .next()
            .unwrap_or("")
            .trim_end_matches('/')
            .to_string()
    };
    match (locked, installed) {
        (Src::Unsaid, _) => true,
        (Src::Index(_), Src::Index(_)) => true,
        (Src::Editable(_), Src::Editable(_)) => true,
        (Src::Path(_), Src::Path(_)) => true,
        (Src::Url(a), Src::Url(b)) => trim(a) == trim(b),
        (Src::Git(a), Src::Git(b)) => {
            let base = |u: &str| {
                trim(u.trim_start_matches("git+"))
                    .split('@')
                    .next()
                    .unwrap_or("")
                    .to_string()
            };
            base(a) == base(b)
        }
        _ => false,
    }
}

/// Where an installed distribution came from: its `direct_url.json`, else an index.
pub fn installed_source(root: &Root, p: &Package) -> Src {
    if p.editable.is_some() {
        return Src::Editable(p.editable.clone().unwrap_or_default());
    }
    let file = Path::new(&p.metadata).join("direct_url.json");
    let Ok(bytes) = root.read_limited(&file, 1024 * 1024) else {
        return Src::Index(None);
    };
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
        return Src::Index(None);
    };
    let url = v
        .get("url")
        .and_then(|u| u.as_str())
        .unwrap_or("")
        .to_string();
    if v.get("vcs_info").is_some() {
        return Src::Git(url);
    }
    let path = url.strip_prefix("file://").map(str::to_string);
    if v.pointer("/dir_info/editable").and_then(|e| e.as_bool()) == Some(true) {
        return Src::Editable(path.unwrap_or(url));
    }
    match path {
        Some(p) => Src::Path(p),
        None => Src::Url(url),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkg(name: &str, version: &str) -> Package {
        Package {
            name: name.into(),
            version: version.into(),
            location: "/v/lib/python3.11/site-packages".into(),
            metadata: format!("/v/lib/python3.11/site-packages/{name}-{version}.dist-info"),
            ..Package::default()
        }
    }

    fn entry(name: &str, version: &str) -> Entry {
        Entry {
            name: name.into(),
            version: Some(version.into()),
            line: 7,
            source: Src::Index(Some("https://download.pytorch.org/whl/cu124".into())),
            ..Entry::default()
        }
    }

    #[test]
    fn each_kind_of_drift() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::new(t.path());
        let site = "/v/lib/python3.11/site-packages";
        let dj = t.path().join(&site[1..]).join("six-1.17.0.dist-info");
        std::fs::create_dir_all(&dj).unwrap();
        std::fs::write(
            dj.join("direct_url.json"),
            r#"{"url": "file:///wheels/six-1.17.0-py3-none-any.whl", "archive_info": {}}"#,
        )
        .unwrap();
        let py = Python {
            path: "/v/bin/python".into(),
            sys_path: vec![crate::snapshot::python::SysPathEntry {
                path: site.into(),
                origin: SysPathOrigin::Site,
                exists: true,
            }],
            packages: vec![
                pkg("torch", "2.6.0+cpu"),
                pkg("urllib3", "1.26.20"),
                pkg("six", "1.17.0"),
                pkg("nvidia-nccl-cu12", "2.21.5"),
                pkg("pip", "24.0"),
                pkg("rich", "13.0"),
                pkg("jax", "0.4.30"),
            ],
            ..Python::default()
        };
        let entries = vec![
            entry("torch", "2.6.0+cu124"),
            entry("urllib3", "2.8.0"),
            entry("six", "1.17.0"),
            entry("packaging", "26.4"),
            entry("nvidia-nccl-cu12", "2.21.5"),
        ];
        let c = compare(&root, "/p/uv.lock", "uv sync", &entries, &py);
        let kinds: Vec<(&str, DriftKind)> =
            c.drift.iter().map(|d| (d.name.as_str(), d.kind)).collect();
        assert_eq!(
            kinds,
            vec![
                ("torch", DriftKind::Local),
                ("urllib3", DriftKind::Version),
                ("six", DriftKind::Source),
                ("packaging", DriftKind::NotInstalled),
                ("jax", DriftKind::Unlocked),
            ]
        );
        assert_eq!(c.unlocked, ["rich"]);
        assert_eq!(c.drift[0].pinned_at.as_deref(), Some("/p/uv.lock:7"));
        assert_eq!(c.drift[0].family.as_deref(), Some("torch"));
        assert_eq!(
            c.drift[2].installed_source.as_deref(),
            Some("path /wheels/six-1.17.0-py3-none-any.whl")
        );
        // The same environment, synced: quiet.
        let synced = vec![entry("torch", "2.6.0+cpu"), entry("urllib3", "1.26.20")];
        let mut clean = py.clone();
        clean
            .packages
            .retain(|p| ["torch", "urllib3", "pip"].contains(&p.name.as_str()));
        let c = compare(&root, "/p/uv.lock", "uv sync", &synced, &clean);
        assert!(c.drift.is_empty() && c.unlocked.is_empty(), "{c:?}");
    }
}
