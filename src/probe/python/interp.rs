//! Inspecting one interpreter: layout and import path ([`super::site`]), the distributions on
//! every `sys.path` directory ([`super::dist_info`]) and shadowing (one name in two places).

use super::discovery::Found;
use super::dist_info::Scanner;
use super::site;
use crate::root::{Env, Root};
use crate::snapshot::python::{Copy, Package, Python, PythonKind, Shadowed, SysPathOrigin};
use crate::snapshot::ProbeError;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

/// What discovery knows, before anything is read: path, canonical path, sources.
pub fn named(found: &Found) -> Python {
    Python {
        path: found.path.to_string_lossy().into_owned(),
        canonical_path: found
            .canonical
            .as_ref()
            .map(|c| c.to_string_lossy().into_owned()),
        exists: found.canonical.is_some(),
        kind: found.kind_hint.unwrap_or(PythonKind::Unknown),
        sources: found.sources.clone(),
        conda_env: found.conda_env.clone(),
        ..Default::default()
    }
}

/// Inspect the interpreter `found` names. Never executes it.
pub fn inspect(root: &Root, env: &Env, found: &Found, errors: &mut Vec<ProbeError>) -> Python {
    let mut py = named(found);
    if !py.exists && !root.exists(&found.path) {
        // A dangling reference (a deleted venv named by an IDE): still say what pyvenv.cfg says
        // if the directory is there, but do not go looking for packages of nothing.
        if !found.path.parent().map(|d| root.is_dir(d)).unwrap_or(false) {
            return py;
        }
    }
    let lay = site::layout(root, env, &found.path, found.canonical.as_deref(), errors);
    if lay.kind != PythonKind::Unknown || found.kind_hint.is_none() {
        py.kind = lay.kind;
    }
    py.version = lay.version.map(|v| v.to_string());
    py.prefix = lay
        .prefix
        .as_ref()
        .map(|p| p.to_string_lossy().into_owned());
    py.base_executable = lay
        .base_executable
        .as_ref()
        .map(|p| p.to_string_lossy().into_owned());
    py.include_system_site_packages = lay
        .venv
        .as_ref()
        .map(|c| c.include_system_site_packages)
        .unwrap_or(false);
    if lay.version.is_none() {
        errors.push(ProbeError::at(
            "python",
            &found.path,
            "version unknown (no pyvenv.cfg version, conda-meta, patchlevel.h or lib/pythonX.Y): \
             the import path cannot be worked out",
        ));
    }
    let (sys_path, mut listings) = site::sys_path(root, env, &lay, errors);
    py.sys_path = sys_path;
    let (packages, origins) = scan_packages(root, &py, &mut listings, errors);
    py.shadowed = shadowing(&packages, &origins);
    py.packages = packages;
    py
}

/// Distributions on every existing `sys.path` directory, in path order, each with the origin of
/// the entry it came from. The same metadata reached twice (an `.egg-link` target that is also on
/// the path) counts once.
fn scan_packages(
    root: &Root,
    py: &Python,
    listings: &mut site::Listings,
    errors: &mut Vec<ProbeError>,
) -> (Vec<Package>, Vec<SysPathOrigin>) {
    let mut scanner = Scanner::new(root);
    let mut packages = Vec::new();
    let mut origins = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    for entry in &py.sys_path {
        if !entry.exists || entry.path.ends_with(".zip") || !entry.path.starts_with('/') {
            continue;
        }
        // A directory whose name is not UTF-8 is written lossily in `sys_path`; the real path is
        // the one `sys_path` listed, with the same lossy spelling.
        let dir = if entry.path.contains('\u{FFFD}') {
            listings
                .keys()
                .find(|k| k.to_string_lossy() == entry.path.as_str())
                .cloned()
                .unwrap_or_else(|| PathBuf::from(&entry.path))
        } else {
            PathBuf::from(&entry.path)
        };
        let Some(listing) = site::listing(root, listings, &dir, errors) else {
            continue;
        };
        for p in scanner.scan(&dir, listing, errors) {
            if seen.insert(p.metadata.clone()) {
                origins.push(entry.origin);
                packages.push(p);
            }
        }
    }
    (packages, origins)
}

/// Names found more than once: the first in path order wins, the rest are hidden behind it.
fn shadowing(packages: &[Package], origins: &[SysPathOrigin]) -> Vec<Shadowed> {
    let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut order: Vec<&str> = Vec::new();
    for (i, p) in packages.iter().enumerate() {
        let v = by_name.entry(p.name.as_str()).or_default();
        if v.is_empty() {
            order.push(p.name.as_str());
        }
        v.push(i);
    }
    let copy = |i: usize| Copy {
        version: packages[i].version.clone(),
        location: packages[i].location.clone(),
        origin: origins[i],
    };
    order
        .into_iter()
        .filter_map(|name| {
            let idx = &by_name[name];
            (idx.len() > 1).then(|| Shadowed {
                name: name.to_string(),
                winner: copy(idx[0]),
                hidden: idx[1..].iter().map(|&i| copy(i)).collect(),
            })
        })
        .collect()
}
