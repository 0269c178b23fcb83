//! Frameworks installed by conda: the package's `conda-meta/<name>-<version>-<build>.json`
//! record, and what its run requirements say about the build.
//!
//! A conda build of torch or TensorFlow has no nvidia-* requirement: its CUDA libraries are
//! conda packages in the environment's `lib/`, reached through the RPATH conda-build writes
//! (`$ORIGIN/../../../..` from `site-packages/torch/lib`), which the loader model follows like any
//! other. What differs is where the build facts are written: the record's `depends` pins the
//! cuDNN and CUDA the build was made against (`cudnn >=9.3.0.75,<10.0a0`,
//! `cuda-version >=12.6,<13`), which `torch/version.py` does not say for cuDNN.

use super::{read_text, PROBE};
use crate::root::Root;
use crate::snapshot::libs::Framework;
use crate::snapshot::ProbeError;
use std::path::{Path, PathBuf};

/// conda package names of a framework kind (conda-forge and the pytorch channel).
fn conda_names(kind: &str) -> &'static [&'static str] {
    match kind {
        "torch" => &["pytorch", "pytorch-gpu", "torch"],
        "tensorflow" => &["tensorflow-base", "tensorflow", "tensorflow-gpu"],
        "jax" => &["jaxlib", "jax"],
        "cupy" => &["cupy-core", "cupy"],
        "onnxruntime" => &["onnxruntime"],
        _ => &[],
    }
}

/// The conda prefix a `site-packages` directory belongs to (`<prefix>/lib/pythonX.Y/site-packages`),
/// when that prefix has a `conda-meta/`.
pub fn prefix_of(root: &Root, site: &Path) -> Option<PathBuf> {
    let prefix = site.parent()?.parent()?.parent()?;
    root.is_dir(&prefix.join("conda-meta"))
        .then(|| prefix.to_path_buf())
}

/// Fill `installed_by` and, from the conda record of `fw`'s package when there is one, the
/// build's cuDNN (and CUDA, when `version.py` did not say it).
pub fn scan(
    root: &Root,
    site: &Path,
    kind: &str,
    installer: Option<&str>,
    fw: &mut Framework,
    errors: &mut Vec<ProbeError>,
) {
    let record = prefix_of(root, site).and_then(|p| find_record(root, &p, kind, &fw.version));
    let Some(record) = record else {
        fw.installed_by = installer.map(str::to_string);
        return;
    };
    fw.installed_by = Some("conda".into());
    fw.evidence
        .push(format!("installed_by: {}", record.display()));
    let Some(text) = read_text(root, &record, errors) else {
        return;
    };
    let json: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            errors.push(ProbeError::at(PROBE, &record, format!("not JSON: {e}")));
            return;
        }
    };
    let depends = json
        .get("depends")
        .and_then(|d| d.as_array())
        .into_iter()
        .flatten()
        .filter_map(|d| d.as_str());
    for dep in depends {
        let Some((name, spec)) = dep.split_once(' ') else {
            continue;
        };
        let Some(low) = lower_bound(spec) else {
            continue;
        };
        match name {
            "cudnn" if fw.cudnn_version.is_none() => {
                fw.cudnn_version = Some(low.split('.').take(2).collect::<Vec<_>>().join("."));
                fw.evidence
                    .push(format!("cudnn_version: {} depends {dep}", record.display()));
            }
            "cuda-version" | "cudatoolkit" if fw.cuda_version.is_none() => {
                fw.cuda_version = Some(low.to_string());
                fw.evidence
                    .push(format!("cuda_version: {} depends {dep}", record.display()));
            }
            _ => {}
        }
    }
}

/// `conda-meta/<name>-<version>-<build>.json` for one of `kind`'s conda names at `version`.
fn find_record(root: &Root, prefix: &Path, kind: &str, version: &str) -> Option<PathBuf> {
    let names = conda_names(kind);
    let mut files = root.read_dir(&prefix.join("conda-meta")).ok()?;
    files.sort();
    let public = version.split('+').next().unwrap_or(version);
    files.into_iter().find(|f| {
        let Some(n) = f.file_name().and_then(|n| n.to_str()) else {
            return false;
        };
        names.iter().any(|c| {
            n.strip_prefix(c)
                .and_then(|r| r.strip_prefix('-'))
                .and_then(|r| r.strip_prefix(public))
                .is_some_and(|r| r.starts_with('-') && r.ends_with(".json"))
        })
    })
}

/// The lower bound of a conda version spec (`>=9.3.0.75,<10.0a0` → `9.3.0.75`; `9.3.*` → `9.3`).
fn lower_bound(spec: &str) -> Option<&str> {
    let first = spec.split([',', '|']).next()?.trim();
    let v = first
        .strip_prefix(">=")
        .or_else(|| first.strip_prefix("=="))
        .or_else(|| first.strip_prefix('='))
        .unwrap_or(first)
        .trim_end_matches(".*")
        .trim_end_matches('*');
    (v.starts_with(|c: char| c.is_ascii_digit())).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lower_bounds_of_conda_specs() {
        assert_eq!(lower_bound(">=9.3.0.75,<10.0a0"), Some("9.3.0.75"));
        assert_eq!(lower_bound(">=12.6,<13"), Some("12.6"));
        assert_eq!(lower_bound("9.3.*"), Some("9.3"));
        assert_eq!(lower_bound("<13"), None);
    }

    #[test]
    fn a_record_names_the_build_cudnn() {
        let t = tempfile::tempdir().unwrap();
        let site = t.path().join("lib/python3.11/site-packages");
        std::fs::create_dir_all(&site).unwrap();
        std::fs::create_dir_all(t.path().join("conda-meta")).unwrap();
        std::fs::write(
            t.path()
                .join("conda-meta/pytorch-2.5.1-cuda126_py311_h1234567_303.json"),
            r#"{"name":"pytorch","version":"2.5.1","depends":["cudnn >=9.3.0.75,<10.0a0","cuda-version >=12.6,<13","python >=3.11,<3.12.0a0"]}"#,
        )
        .unwrap();
        let mut fw = Framework {
            version: "2.5.1".into(),
            cuda_version: Some("12.6".into()),
            ..Default::default()
        };
        let mut errors = Vec::new();
        scan(
            &Root::host(),
            &site,
            "torch",
            Some("pip"),
            &mut fw,
            &mut errors,
        );
        assert_eq!(fw.installed_by.as_deref(), Some("conda"));
        assert_eq!(fw.cudnn_version.as_deref(), Some("9.3"));
        assert_eq!(fw.cuda_version.as_deref(), Some("12.6"));
        assert!(errors.is_empty());
        // No record for another version: the dist-info's installer.
        let mut other = Framework {
            version: "2.6.0".into(),
            ..Default::default()
        };
        scan(
            &Root::host(),
            &site,
            "torch",
            Some("pip"),
            &mut other,
            &mut errors,
        );
        assert_eq!(other.installed_by.as_deref(), Some("pip"));
        assert_eq!(other.cudnn_version, None);
    }
}
