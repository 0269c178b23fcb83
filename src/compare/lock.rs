//! `compare LOCK SNAPSHOT`: a lock file against a snapshot, shown as machine-to-machine drift.
//!
//! The lock is read for the snapshot's job interpreter (its Python version, the machine's
//! architecture, the `pyproject.toml` beside the lock), as `check` reads it on the machine.
//! It becomes a copy of the snapshot whose job interpreter has exactly the locked packages
//! (the seeded `pip`/`setuptools`/`wheel` and, for a PyPI lock, conda's own distributions
//! kept, as the sync tools keep them); that copy, labelled with the lock's path, is compared
//! with the snapshot, so a package the lock pins at another version, one it lacks and one it
//! pins that is not installed show as the package drift of two machines. A conda package is
//! compared where the snapshot lists it as a distribution conda installed (a snapshot does not
//! carry conda-meta records). Sources (direct_url.json) are not in a snapshot: only versions
//! and local labels are compared.

use crate::probe::lock::{self, model::Target};
use crate::snapshot::python::{Package, PythonRole, SysPathOrigin};
use crate::{Error, Snapshot};
use std::path::Path;

/// Installed distributions every sync tool leaves alone.
const SEEDED: &[&str] = &["pip", "setuptools", "wheel", "distribute"];

/// Whether `path` names a lock file (by its file name).
pub fn is_lock(path: &Path) -> bool {
    lock::format_of(path).is_some() && path.extension().is_none_or(|e| e != "json")
}

/// The snapshot as the lock `path` would have it: the job interpreter's packages replaced.
pub fn as_locked(path: &Path, snap: &Snapshot) -> Result<Snapshot, Error> {
    let what = path.display().to_string();
    let format = lock::format_of(path).ok_or_else(|| Error::input(&what, "not a lock file"))?;
    let bytes = std::fs::read(path).map_err(|e| Error::input(&what, e.to_string()))?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let mut out = snap.clone();
    let Some(py) = out
        .pythons
        .iter_mut()
        .find(|p| p.exists && p.roles.contains(&PythonRole::Job))
    else {
        return Err(Error::input(
            &what,
            "the snapshot has no interpreter with the `job` role to compare the lock with",
        )
        .with_hint("take the snapshot with `envdoctor snapshot --project DIR`"));
    };
    let machine = snap
        .host
        .arch
        .clone()
        .unwrap_or_else(|| crate::probe::python::requires::DEFAULT_MACHINE.to_string());
    let target = Target::linux(py.version.as_deref(), &machine);
    let pyproject = path
        .parent()
        .map(|d| d.join("pyproject.toml"))
        .and_then(|p| std::fs::read_to_string(p).ok());
    let root = crate::root::Root::host();
    let locked = lock::read(
        &root,
        path,
        format,
        &text,
        &target,
        pyproject.as_deref(),
        py,
    )
    .map_err(|e| Error::input(&what, e))?;
    let site = py
        .sys_path
        .iter()
        .find(|s| s.origin == SysPathOrigin::Site)
        .map(|s| s.path.clone())
        .unwrap_or_default();
    let conda = |p: &Package| p.installer.as_deref() == Some("conda");
    let has_conda = locked.entries.iter().any(|e| e.conda);
    let mut packages: Vec<Package> = py
        .packages
        .iter()
        .filter(|p| SEEDED.contains(&p.name.as_str()) || (!has_conda && conda(p)))
        .cloned()
        .collect();
    for e in &locked.entries {
        let installed = py.packages.iter().find(|p| p.name == e.name);
        if e.conda && !installed.is_some_and(conda) {
            continue;
        }
        if packages.iter().any(|p| p.name == e.name) {
            packages.retain(|p| p.name != e.name || SEEDED.contains(&e.name.as_str()));
        }
        let version = match (&e.version, installed) {
            (Some(v), _) => v.clone(),
            (None, Some(p)) if meets(e.spec.as_deref(), &p.version) => p.version.clone(),
            (None, _) => e.spec.clone().unwrap_or_else(|| "*".into()),
        };
        packages.retain(|p| p.name != e.name);
        packages.push(Package {
            name: e.name.clone(),
            local: version.split_once('+').map(|(_, l)| l.to_string()),
            version_valid: pep440_rs::Version::from_str(&version).is_ok(),
            version,
            location: installed.map_or(site.clone(), |p| p.location.clone()),
            metadata: format!("{}:{}", e.file.as_deref().unwrap_or(&what), e.line),
            installer: installed.and_then(|p| p.installer.clone()),
            ..Package::default()
        });
    }
    packages.sort_by(|a, b| a.name.cmp(&b.name));
    py.packages = packages;
    Ok(out)
}

use std::str::FromStr;

/// Whether `version` meets a requirement's specifier (a conda one when PEP 440 cannot read it).
fn meets(spec: Option<&str>, version: &str) -> bool {
    let Some(spec) = spec else {
        return true;
    };
    match (
        pep440_rs::VersionSpecifiers::from_str(spec),
        pep440_rs::Version::from_str(version),
    ) {
        (Ok(s), Ok(v)) => s.contains(&v),
        _ => lock::conda::version_matches(spec, version).unwrap_or(true),
    }
}
