//! Whether a lock is older than the project's declared dependencies.
//!
//! For `uv.lock` this is `uv lock --check`'s question: the requirements uv recorded for the
//! project (`[package.metadata] requires-dist`, `requires-dev`) against `pyproject.toml`'s
//! `[project] dependencies`, `optional-dependencies` and `[dependency-groups]`, name and
//! specifier (markers aside). For other locks, which record no such thing: every dependency
//! `pyproject.toml` declares for this interpreter (its marker holds) must be locked, at a
//! version its specifier allows.

use super::model::{Declared, Entry, Target};
use pep508_rs::VersionOrUrl;
use std::collections::BTreeSet;
use std::str::FromStr;

/// One declared requirement and its marker.
pub struct Req {
    /// Group, name, specifier.
    pub declared: Declared,
    /// The marker (`""` when none).
    pub marker: String,
}

/// The requirements of a `pyproject.toml` (main, extras flattened, dependency groups), or
/// `None` when it declares none (or is not TOML).
pub fn declared(pyproject: &str) -> Option<Vec<Req>> {
    let doc: toml::Table = toml::from_str(pyproject).ok()?;
    let mut out = Vec::new();
    let project = doc.get("project").and_then(|p| p.as_table());
    let mut add = |group: &str, list: Option<&toml::Value>| {
        for v in list.and_then(|l| l.as_array()).into_iter().flatten() {
            let Some(s) = v.as_str() else { continue };
            let Ok(Some(r)) = crate::probe::python::requires::parse(s) else {
                continue;
            };
            let spec = match &r.version_or_url {
                Some(VersionOrUrl::VersionSpecifier(v)) => v.to_string(),
                _ => String::new(),
            };
            let marker = r.marker.try_to_string().unwrap_or_default();
            out.push(Req {
                declared: Declared::new(group, r.name.as_ref(), &spec),
                marker,
            });
        }
    };
    if let Some(p) = project {
        add("", p.get("dependencies"));
        if let Some(opt) = p.get("optional-dependencies").and_then(|o| o.as_table()) {
            for list in opt.values() {
                add("", Some(list));
            }
        }
    }
    if let Some(groups) = doc.get("dependency-groups").and_then(|g| g.as_table()) {
        for (g, list) in groups {
            add(&format!("group:{}", super::model::normalize(g)), Some(list));
        }
    }
    (!out.is_empty()).then_some(out)
}

/// `uv lock --check`: what differs between the recorded and the declared requirements.
pub fn against_recorded(declared: &[Req], recorded: &[Declared]) -> Vec<String> {
    let want: BTreeSet<&Declared> = declared.iter().map(|r| &r.declared).collect();
    let have: BTreeSet<&Declared> = recorded.iter().collect();
    let mut out = Vec::new();
    for d in want.difference(&have) {
        out.push(format!(
            "pyproject.toml declares `{}`, which the lock does not record",
            d.describe()
        ));
    }
    for d in have.difference(&want) {
        out.push(format!(
            "the lock records `{}`, which pyproject.toml no longer declares",
            d.describe()
        ));
    }
    out
}

/// For locks that record nothing: every declared main dependency that applies here is locked
/// at a version it allows.
pub fn against_entries(declared: &[Req], entries: &[Entry], target: &Target) -> Vec<String> {
    let mut out = Vec::new();
    for r in declared.iter().filter(|r| r.declared.group.is_empty()) {
        if !target.holds(&r.marker).unwrap_or(false) {
            continue;
        }
        let d = &r.declared;
        let Some(e) = entries.iter().find(|e| e.name == d.name) else {
            out.push(format!(
                "pyproject.toml declares `{}`, which the lock does not have",
                d.describe()
            ));
            continue;
        };
        let (Some(v), false) = (&e.version, d.spec.is_empty()) else {
            continue;
        };
        let ok = match (
            pep440_rs::VersionSpecifiers::from_str(&d.spec),
            pep440_rs::Version::from_str(v),
        ) {
            (Ok(s), Ok(v)) => s.contains(&v),
            _ => true,
        };
        if !ok {
            out.push(format!(
                "the lock pins {} {v}, which pyproject.toml's `{}` does not allow",
                d.name,
                d.describe()
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::lock::{model::Src, uv};

    #[test]
    fn uv_lock_check_semantics_on_the_real_lock() {
        let py = include_str!("../../../fixtures/locks/uv/pyproject.toml");
        let lock = include_str!("../../../fixtures/locks/uv/uv.lock");
        let t = Target::linux(Some("3.11.7"), "x86_64");
        let l = uv::read(lock, &t, &uv::Groups::default()).unwrap();
        let rec = l.recorded.clone().unwrap();
        assert_eq!(
            against_recorded(&declared(py).unwrap(), &rec),
            Vec::<String>::new()
        );
        let bumped = py.replace("\"six==1.17.0\"", "\"six==1.16.0\"");
        let why = against_recorded(&declared(&bumped).unwrap(), &rec);
        assert_eq!(why.len(), 2, "{why:?}");
        assert!(why[0].contains("six==1.16.0"), "{why:?}");
        let added = py.replace("\"packaging\",", "\"packaging\",\n    \"numpy\",");
        let why = against_recorded(&declared(&added).unwrap(), &rec);
        assert!(why.len() == 1 && why[0].contains("`numpy`"), "{why:?}");
        // The general check agrees on the same files.
        assert!(against_entries(&declared(py).unwrap(), &l.entries, &t).is_empty());
        let why = against_entries(&declared(&bumped).unwrap(), &l.entries, &t);
        assert!(why.len() == 1 && why[0].contains("1.17.0"), "{why:?}");
        let why = against_entries(&declared(&added).unwrap(), &l.entries, &t);
        assert!(why.len() == 1 && why[0].contains("numpy"), "{why:?}");
        assert!(declared("not toml [").is_none());
        let _ = Src::Unsaid;
    }
}
