//! Facts derived once from the inspected interpreters, so rules and `compare` do not each
//! rebuild them (and do not nest a loop over every interpreter inside another):
//!
//! - [`assign_families`]: `packages[].family`, from the one table of names
//!   (`crate::snapshot::family`);
//! - [`assign_roles`]: what each interpreter is to the person at the machine — the one a job
//!   runs (`job`), the one `python` in the shell runs (`shell`), one an IDE or notebook runs
//!   (`ide`), the one `pip` installs into (`pip-target`);
//! - [`ide_drift`]: for each IDE interpreter that is not the shell's, how its packages differ
//!   from the shell interpreter's (ML packages one by one, the rest counted), computed with one
//!   hash map per interpreter, so 1,500 kernelspecs cost 1,500 map lookups per package, not
//!   1,500².

use crate::snapshot::family::{family, family_of, is_ml};
use crate::snapshot::python::{IdeDrift, PackageDrift, Python, PythonRole, SourceKind};
use std::collections::HashMap;

/// How many non-ML names an [`IdeDrift`] spells out.
pub const OTHER_NAMES: usize = 5;

/// Fill `packages[].family` and `packages[].built_for_cudnn` of every interpreter.
pub fn assign_families(pythons: &mut [Python]) {
    for py in pythons {
        for p in &mut py.packages {
            p.family = family_of(&p.name);
            p.built_for_cudnn = p.local.as_deref().and_then(cudnn_of_label);
        }
    }
}

/// The cuDNN release a local version label names: a `cudnn<major><minor>[<patch>]` part
/// (`cuda12.cudnn89` → `8.9`, `cuda11.cudnn805` → `8.0.5`, `cudnn91` → `9.1`), as jaxlib's
/// CUDA wheels were labelled.
pub fn cudnn_of_label(local: &str) -> Option<String> {
    let lower = local.to_ascii_lowercase();
    let digits = lower
        .split(['.', '_', '-'])
        .find_map(|part| part.strip_prefix("cudnn"))
        .filter(|d| d.len() >= 2 && d.bytes().all(|b| b.is_ascii_digit()))?;
    let (major, rest) = digits.split_at(1);
    let (minor, patch) = rest.split_at(1);
    Some(if patch.is_empty() {
        format!("{major}.{minor}")
    } else {
        format!("{major}.{minor}.{patch}")
    })
}

/// The interpreter (index) with the best-ranked source of these kinds, by command name
/// (earlier in `names` is better) then PATH position.
fn first_on_path(pythons: &[Python], kinds: &[SourceKind], names: &[&str]) -> Option<usize> {
    let mut best: Option<((usize, usize), usize)> = None;
    for (i, py) in pythons.iter().enumerate() {
        if !py.exists {
            continue;
        }
        for s in &py.sources {
            if !kinds.contains(&s.kind) {
                continue;
            }
            let (Some(name), Some(entry)) = (s.command.as_deref(), s.path_entry) else {
                continue;
            };
            let Some(rank) = names.iter().position(|n| *n == name) else {
                continue;
            };
            if best.is_none_or(|(b, _)| (rank, entry) < b) {
                best = Some(((rank, entry), i));
            }
        }
    }
    best.map(|(_, i)| i)
}

/// Fill `roles` of every interpreter (see [`PythonRole`]).
pub fn assign_roles(pythons: &mut [Python]) {
    for py in pythons.iter_mut() {
        py.roles.clear();
    }
    let shell = first_on_path(
        pythons,
        &[SourceKind::Path, SourceKind::PyenvShim],
        &["python", "python3"],
    );
    let pip = first_on_path(pythons, &[SourceKind::PipShebang], &["pip", "pip3"]);
    let has =
        |py: &Python, kinds: &[SourceKind]| py.sources.iter().any(|s| kinds.contains(&s.kind));
    let job = pythons
        .iter()
        .position(|p| p.exists && has(p, &[SourceKind::VirtualEnv, SourceKind::CondaPrefix]))
        .or_else(|| {
            pythons.iter().position(|p| {
                p.exists
                    && has(
                        p,
                        &[
                            SourceKind::ProjectVenv,
                            SourceKind::Poetry,
                            SourceKind::Pipenv,
                            SourceKind::Pixi,
                            SourceKind::CondaEnvironmentYml,
                        ],
                    )
            })
        })
        .or(shell);
    for (i, py) in pythons.iter_mut().enumerate() {
        if Some(i) == job {
            py.roles.push(PythonRole::Job);
        }
        if Some(i) == shell {
            py.roles.push(PythonRole::Shell);
        }
        if has(
            py,
            &[
                SourceKind::Vscode,
                SourceKind::Pycharm,
                SourceKind::JupyterKernel,
            ],
        ) {
            py.roles.push(PythonRole::Ide);
        }
        if Some(i) == pip {
            py.roles.push(PythonRole::PipTarget);
        }
    }
}

/// Fill `ide_drift` of every existing IDE interpreter that is not the shell's, against the
/// shell's interpreter (roles must be assigned first). Only what the shell has counts: a
/// package the shell lacks is not drift the person at the shell would notice.
pub fn ide_drift(pythons: &mut [Python]) {
    let Some(shell_i) = pythons
        .iter()
        .position(|p| p.roles.contains(&PythonRole::Shell))
    else {
        return;
    };
    let shell = &pythons[shell_i];
    let shell_path = shell.path.clone();
    let shell_source = shell
        .sources
        .iter()
        .find(|s| matches!(s.kind, SourceKind::Path | SourceKind::PyenvShim))
        .map(|s| s.detail.clone())
        .unwrap_or_default();
    // The copy `import` sees of each name, in the shell's interpreter, by name.
    let mut shell_pkgs: Vec<(String, String)> = visible(shell)
        .into_iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    shell_pkgs.sort();
    for (i, py) in pythons.iter_mut().enumerate() {
        py.ide_drift = None;
        if i == shell_i
            || !py.exists
            || !py.roles.contains(&PythonRole::Ide)
            || py.path == shell_path
        {
            continue;
        }
        let mine = visible(py);
        let mut d = IdeDrift {
            shell: shell_path.clone(),
            shell_source: shell_source.clone(),
            ..Default::default()
        };
        let mut others: Vec<String> = Vec::new();
        for (name, shell_version) in &shell_pkgs {
            let ide_version = mine.get(name.as_str()).copied();
            if ide_version == Some(shell_version.as_str()) {
                continue;
            }
            let entry = PackageDrift {
                name: name.clone(),
                family: family(name).map(str::to_string),
                ide_version: ide_version.map(str::to_string),
                shell_version: shell_version.clone(),
            };
            match (is_ml(name), ide_version.is_some()) {
                (true, true) => d.ml_changed.push(entry),
                (true, false) => d.ml_missing.push(entry),
                (false, _) => others.push(name.clone()),
            }
        }
        others.sort();
        d.other_count = others.len();
        others.truncate(OTHER_NAMES);
        d.other_first = others;
        if !d.ml_changed.is_empty() || !d.ml_missing.is_empty() || d.other_count > 0 {
            py.ide_drift = Some(d);
        }
    }
}

/// Name → version of the copy `import` sees (the first on the path; a shadowed name's winner).
fn visible(py: &Python) -> HashMap<&str, &str> {
    let mut m: HashMap<&str, &str> = py
        .packages
        .iter()
        .rev()
        .map(|p| (p.name.as_str(), p.version.as_str()))
        .collect();
    for s in &py.shadowed {
        m.insert(s.name.as_str(), s.winner.version.as_str());
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::python::{Package, Source};

    #[test]
    fn cudnn_from_local_labels() {
        // jaxlib's CUDA wheel labels, as published on the jax-releases index.
        assert_eq!(cudnn_of_label("cuda12.cudnn89").as_deref(), Some("8.9"));
        assert_eq!(cudnn_of_label("cuda11.cudnn86").as_deref(), Some("8.6"));
        assert_eq!(cudnn_of_label("cuda11.cudnn805").as_deref(), Some("8.0.5"));
        assert_eq!(cudnn_of_label("cuda12_cudnn91").as_deref(), Some("9.1"));
        assert_eq!(cudnn_of_label("cu121"), None);
        assert_eq!(cudnn_of_label("cuda112"), None);
        assert_eq!(cudnn_of_label("cudnn8"), None);
        assert_eq!(cudnn_of_label("cudnnx9"), None);
    }

    fn py(path: &str, sources: &[(SourceKind, &str)], pkgs: &[(&str, &str)]) -> Python {
        Python {
            path: path.into(),
            exists: true,
            sources: sources
                .iter()
                .map(|(k, d)| Source::from_detail(*k, d))
                .collect(),
            packages: pkgs
                .iter()
                .map(|(n, v)| Package {
                    name: n.to_string(),
                    version: v.to_string(),
                    location: format!("{path}/site"),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn roles_job_shell_ide_pip() {
        let mut ps = vec![
            py(
                "/usr/bin/python3",
                &[
                    (SourceKind::Path, "python3 (PATH entry 1: /usr/bin)"),
                    (
                        SourceKind::PipShebang,
                        "pip3 (PATH entry 1: /usr/bin): #!/usr/bin/python3",
                    ),
                ],
                &[],
            ),
            py(
                "/v/bin/python",
                &[
                    (SourceKind::VirtualEnv, "VIRTUAL_ENV=/v"),
                    (SourceKind::Path, "python (PATH entry 0: /v/bin)"),
                    (
                        SourceKind::PipShebang,
                        "pip (PATH entry 0: /v/bin): #!/v/bin/python",
                    ),
                ],
                &[],
            ),
            py(
                "/k/bin/python",
                &[(SourceKind::JupyterKernel, "/k/kernel.json")],
                &[],
            ),
        ];
        assign_roles(&mut ps);
        assert_eq!(ps[0].roles, vec![]);
        assert_eq!(
            ps[1].roles,
            vec![PythonRole::Job, PythonRole::Shell, PythonRole::PipTarget]
        );
        assert_eq!(ps[2].roles, vec![PythonRole::Ide]);
    }

    #[test]
    fn ide_drift_splits_ml_packages_from_the_rest() {
        let mut ps = vec![
            py(
                "/v/bin/python",
                &[(SourceKind::Path, "python (PATH entry 0: /v/bin)")],
                &[
                    ("tensorflow-gpu", "2.15.0"),
                    ("torch", "2.4.0"),
                    ("numpy", "1.26.4"),
                    ("requests", "2.32.3"),
                    ("idna", "3.7"),
                    ("six", "1.16.0"),
                ],
            ),
            py(
                "/k/bin/python",
                &[(SourceKind::Vscode, "/p/.vscode/settings.json")],
                &[
                    ("tensorflow-gpu", "2.4.0"),
                    ("numpy", "1.26.4"),
                    ("requests", "2.31.0"),
                    ("six", "1.16.0"),
                ],
            ),
        ];
        assign_roles(&mut ps);
        ide_drift(&mut ps);
        assert_eq!(ps[0].ide_drift, None);
        let d = ps[1].ide_drift.as_ref().unwrap();
        assert_eq!(d.shell, "/v/bin/python");
        assert_eq!(d.ml_changed.len(), 1);
        assert_eq!(d.ml_changed[0].name, "tensorflow-gpu");
        assert_eq!(d.ml_changed[0].family.as_deref(), Some("tensorflow"));
        assert_eq!(d.ml_changed[0].ide_version.as_deref(), Some("2.4.0"));
        assert_eq!(d.ml_missing.len(), 1);
        assert_eq!(d.ml_missing[0].name, "torch");
        assert_eq!(d.other_count, 2);
        assert_eq!(
            d.other_first,
            vec!["idna".to_string(), "requests".to_string()]
        );
    }

    #[test]
    fn ide_drift_is_linear_in_interpreters() {
        // 1,500 kernels, each with 200 packages: one map per kernel, not a pass per pair.
        let pkgs: Vec<(String, String)> = (0..200)
            .map(|i| (format!("p{i}"), "1.0".to_string()))
            .collect();
        let refs: Vec<(&str, &str)> = pkgs.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        let mut ps = vec![py(
            "/v/bin/python",
            &[(SourceKind::Path, "python (PATH entry 0: /v/bin)")],
            &refs,
        )];
        for k in 0..1500 {
            ps.push(py(
                &format!("/k{k}/bin/python"),
                &[(SourceKind::JupyterKernel, "/k/kernel.json")],
                &refs[..199],
            ));
        }
        assign_roles(&mut ps);
        ide_drift(&mut ps);
        assert!(ps[1..]
            .iter()
            .all(|p| p.ide_drift.as_ref().is_some_and(|d| d.other_count == 1)));
    }
}
