//! Installed distributions: `*.dist-info/METADATA`, `*.egg-info`, editable installs.

use crate::root::Root;
use crate::snapshot::python::Package;
use crate::snapshot::ProbeError;
use std::path::Path;

/// Every distribution whose metadata lies directly in `dir`.
pub fn scan_dir(root: &Root, dir: &Path, errors: &mut Vec<ProbeError>) -> Vec<Package> {
    let mut out = Vec::new();
    let Ok(entries) = root.read_dir(dir) else {
        return out;
    };
    for e in entries {
        let Some(name) = e.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if !name.ends_with(".dist-info") {
            continue;
        }
        let meta = e.join("METADATA");
        match root.read_to_string_lossy(&meta) {
            Ok(text) => {
                let mut pkg = Package {
                    location: dir.to_string_lossy().into_owned(),
                    metadata: e.to_string_lossy().into_owned(),
                    version_valid: true,
                    ..Default::default()
                };
                for line in text.lines() {
                    if line.is_empty() {
                        break;
                    }
                    if let Some(v) = line.strip_prefix("Name: ") {
                        pkg.name = v.trim().to_ascii_lowercase().replace(['_', '.'], "-");
                    } else if let Some(v) = line.strip_prefix("Version: ") {
                        pkg.version = v.trim().to_string();
                    }
                }
                out.push(pkg);
            }
            Err(err) => errors.push(ProbeError::from_root("python", &err)),
        }
    }
    out
}
