//! Who owns each distribution of a conda environment: conda's `conda-meta/*.json` records
//! (conda's `PrefixRecord`: `name`, `version`, `build`, `channel`, `files` relative to the
//! prefix) against the `*.dist-info` the import system reads and its `INSTALLER`.
//!
//! - `pip-over-conda`: a record installed `<name>-<version>.dist-info`, and the copy `import`
//!   sees now is another one (pip uninstalled conda's files and installed its own, or put a
//!   second copy beside them): conda still believes its version is there, its next solve
//!   replaces files pip owns, and compiled packages built against conda's libraries now load
//!   pip's (the pair that breaks `import numpy` in Anaconda installs);
//! - `conda-files-missing`: the record's files are gone and no other installer's copy took their
//!   place (a half-removed package).
//!
//! Only records that install a Python distribution are compared. Each record is read whole,
//! through [`conda_meta::each_record`] (bounded by [`conda_meta::MAX_RECORD`], and
//! [`conda_meta::MAX_BYTES`] per environment); at most [`SAMPLE`] of its files are checked for
//! existence. The prefix and the channel's name are [`conda_meta`]'s too.

use crate::probe::lock::conda_meta::{self, channel_name};
use crate::root::Root;
use crate::snapshot::extensions::OwnerConflict;
use crate::snapshot::python::{Package, Python};
use crate::snapshot::ProbeError;
use serde::Deserialize;
use std::path::Path;

/// Files of a record checked for existence.
const SAMPLE: usize = 16;

/// The parts of a conda-meta record this reads.
#[derive(Deserialize)]
struct Record {
    version: String,
    #[serde(default)]
    build: String,
    #[serde(default)]
    channel: String,
    #[serde(default)]
    files: Vec<String>,
}

/// The owner conflicts of `py` (empty for anything but a conda environment).
pub fn conflicts(root: &Root, py: &Python, errors: &mut Vec<ProbeError>) -> Vec<OwnerConflict> {
    let Some(prefix) = conda_meta::prefix(root, py) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let walk = conda_meta::each_record(root, &prefix, |f, read| {
        let bytes = match read {
            Ok(b) => b,
            Err(e) => {
                errors.push(ProbeError::from_root("extensions", &e));
                return;
            }
        };
        // Most records install no Python distribution: skip them before parsing.
        if memchr::memmem::find(&bytes, b".dist-info/").is_none() {
            return;
        }
        match serde_json::from_slice::<Record>(&bytes) {
            Ok(rec) => out.extend(compare(root, py, &prefix, f, &rec)),
            Err(e) => errors.push(ProbeError::at(
                "extensions",
                f,
                format!("not a conda-meta record: {e}"),
            )),
        }
    });
    if walk.is_ok_and(|stopped| stopped) {
        errors.push(ProbeError::at(
            "extensions",
            prefix.join("conda-meta"),
            "more conda records than envdoctor reads; the rest were not compared",
        ));
    }
    out
}

/// The `<name>-<version>.dist-info` directory a record installs (prefix-relative), if any.
fn dist_info(rec: &Record) -> Option<&str> {
    rec.files.iter().find_map(|f| {
        let (dir, _) = f.split_once(".dist-info/")?;
        let dir = &f[..dir.len() + ".dist-info".len()];
        (dir.contains("site-packages/") && !dir.contains("/site-packages/pip/")).then_some(dir)
    })
}

/// One record against the distributions `py` sees.
fn compare(
    root: &Root,
    py: &Python,
    prefix: &Path,
    record: &Path,
    rec: &Record,
) -> Option<OwnerConflict> {
    let di = dist_info(rec)?;
    let di_path = crate::root::lexical_normalize(&prefix.join(di));
    let dir_name = di_path.file_name()?.to_string_lossy().into_owned();
    let dist_name = dir_name.strip_suffix(".dist-info")?.rsplit_once('-')?.0;
    let name = crate::probe::python::dist_info::normalize_name(dist_name);
    let seen: Option<&Package> = py.package(&name);
    let base = OwnerConflict {
        package: name.clone(),
        conda_version: rec.version.clone(),
        conda_build: format!("{} {}", rec.build, channel_name(&rec.channel))
            .trim()
            .to_string(),
        installed_version: seen.map(|p| p.version.clone()),
        installer: seen.and_then(|p| p.installer.clone()),
        record: record.to_string_lossy().into_owned(),
        ..Default::default()
    };
    let replaced = seen.is_some_and(|p| Path::new(&p.metadata) != di_path);
    if replaced {
        return Some(OwnerConflict {
            kind: "pip-over-conda".into(),
            ..base
        });
    }
    let missing: Vec<String> = rec
        .files
        .iter()
        .take(SAMPLE)
        .filter(|f| {
            !root.exists(&prefix.join(f)) && root.symlink_metadata(&prefix.join(f)).is_err()
        })
        .cloned()
        .collect();
    if missing.is_empty() {
        return None;
    }
    Some(OwnerConflict {
        kind: "conda-files-missing".into(),
        missing_count: missing.len(),
        missing_files: missing.into_iter().take(5).collect(),
        ..base
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dist_info_a_record_installs() {
        let rec = Record {
            version: "1.26.4".into(),
            build: String::new(),
            channel: String::new(),
            files: vec![
                "bin/f2py".into(),
                "lib/python3.11/site-packages/numpy-1.26.4.dist-info/INSTALLER".into(),
            ],
        };
        assert_eq!(
            dist_info(&rec),
            Some("lib/python3.11/site-packages/numpy-1.26.4.dist-info")
        );
    }
}
