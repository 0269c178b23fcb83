//! Inspecting one interpreter: version, kind, prefix, import path, packages, shadowing.

use super::discovery::Found;
use super::dist_info;
use crate::root::{Env, Root};
use crate::snapshot::python::{Python, PythonKind, SysPathEntry, SysPathOrigin};
use crate::snapshot::ProbeError;
use std::path::{Path, PathBuf};

/// Inspect the interpreter `found` names.
pub fn inspect(root: &Root, _env: &Env, found: &Found, errors: &mut Vec<ProbeError>) -> Python {
    let mut py = Python {
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
    };
    let Some(prefix) = found.path.parent().and_then(Path::parent) else {
        return py;
    };
    py.prefix = Some(prefix.to_string_lossy().into_owned());
    let lib = prefix.join("lib");
    let Ok(entries) = root.read_dir(&lib) else {
        return py;
    };
    for e in entries {
        let name = e
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Some(ver) = name.strip_prefix("python") {
            if ver.contains('.') && py.version.is_none() {
                py.version = Some(ver.to_string());
                let site: PathBuf = e.join("site-packages");
                py.sys_path.push(SysPathEntry {
                    path: site.to_string_lossy().into_owned(),
                    origin: SysPathOrigin::Site,
                    exists: root.is_dir(&site),
                });
                py.packages.extend(dist_info::scan_dir(root, &site, errors));
            }
        }
    }
    py
}
