//! Matching interpreters across machines by role, not by absolute path.
//!
//! Each interpreter gets a set of weighted *roles* from `pythons[].sources[]`, `kind`,
//! `conda_env` and its version: `VIRTUAL_ENV`, `project-venv:.venv`, `conda-env:ml`,
//! `pyenv:3.10.4`, `vscode`, `jupyter:<kernel>`, `system:python3.11`, `PATH:python3` (only for
//! the interpreter a bare `python3` really runs: the lowest PATH entry), ... Interpreters of the
//! machines are then clustered greedily, best score first: the score of a pair is the weight of
//! the roles they share, plus a bonus for the same path (the same machine on two days), the same
//! kind and the same version. Identity roles (the project's venv, the active env, a named conda
//! env) outweigh `PATH`, so a venv that is on PATH on one machine and not on the other still
//! lines up with itself. Interpreters that match nothing form groups of their own ("only on").
//! Each group is labelled by the best role of its first member; the label is the interpreter's
//! name in fact keys (`pythons[project-venv:.venv].packages[torch]`).

use super::homeless;
use crate::snapshot::python::{PythonKind, SourceKind};
use crate::Snapshot;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};

/// One cross-machine interpreter identity.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InterpreterGroup {
    /// The label used in fact keys (`PATH:python3`, `project-venv:.venv`, `conda-env:ml`).
    pub label: String,
    /// The roles its members share (or the first member's, for a group of one), best first.
    pub roles: Vec<String>,
    /// For each machine (in input order), the interpreter's path there, or `null` when that
    /// machine has none that matches.
    pub members: Vec<Option<String>>,
}

/// The result of matching: a label for each interpreter of each machine, and the groups.
#[derive(Clone, Debug, Default)]
pub struct Matching {
    /// `labels[machine][python index]`.
    pub labels: Vec<Vec<String>>,
    /// The groups, in order of first appearance.
    pub groups: Vec<InterpreterGroup>,
}

/// Weighted roles of each interpreter of one snapshot.
pub fn roles(snap: &Snapshot) -> Vec<BTreeMap<String, u32>> {
    // The interpreter a bare `python` / `python3` runs: the lowest PATH entry naming it.
    let mut winners: HashMap<String, (usize, usize)> = HashMap::new();
    for (pi, py) in snap.pythons.iter().enumerate() {
        for s in &py.sources {
            if !matches!(s.kind, SourceKind::Path | SourceKind::PyenvShim) {
                continue;
            }
            if let (Some(name), Some(entry)) = (&s.command, s.path_entry) {
                let w = winners.entry(name.clone()).or_insert((entry, pi));
                if entry < w.0 {
                    *w = (entry, pi);
                }
            }
        }
    }
    snap.pythons
        .iter()
        .enumerate()
        .map(|(pi, py)| {
            let mut r: BTreeMap<String, u32> = BTreeMap::new();
            let mut add = |k: String, w: u32| {
                let e = r.entry(k).or_insert(0);
                *e = (*e).max(w);
            };
            for s in &py.sources {
                match s.kind {
                    SourceKind::Path | SourceKind::PyenvShim => {
                        if let Some(name) = &s.command {
                            if winners.get(name).is_some_and(|w| w.1 == pi) {
                                add(format!("PATH:{name}"), 50);
                            }
                        }
                    }
                    SourceKind::PipShebang => add("pip-shebang".into(), 20),
                    SourceKind::VirtualEnv => add("VIRTUAL_ENV".into(), 100),
                    SourceKind::CondaPrefix => add("CONDA_PREFIX".into(), 60),
                    SourceKind::CondaEnv => {
                        let name = py
                            .conda_env
                            .clone()
                            .unwrap_or_else(|| basename(&s.detail).to_string());
                        add(format!("conda-env:{name}"), 90)
                    }
                    SourceKind::PyenvVersion => add(format!("pyenv:{}", basename(&s.detail)), 80),
                    SourceKind::System => add(format!("system:{}", basename(&py.path)), 60),
                    SourceKind::ProjectVenv => {
                        add(format!("project-venv:{}", basename(&s.detail)), 100)
                    }
                    SourceKind::Poetry => add("poetry".into(), 100),
                    SourceKind::Pipenv => add("pipenv".into(), 100),
                    SourceKind::Pixi => add("pixi".into(), 100),
                    SourceKind::CondaEnvironmentYml => add("environment.yml".into(), 100),
                    SourceKind::Vscode => add("vscode".into(), 70),
                    SourceKind::Pycharm => add("pycharm".into(), 70),
                    SourceKind::JupyterKernel => {
                        add(format!("jupyter:{}", kernel_name(&s.detail)), 70)
                    }
                    SourceKind::Other => add(format!("other:{}", homeless(&s.detail)), 10),
                }
            }
            if py.kind == PythonKind::Conda {
                if let Some(env) = &py.conda_env {
                    add(format!("conda-env:{env}"), 90);
                }
            }
            r
        })
        .collect()
}

fn basename(p: &str) -> &str {
    p.trim_end_matches('/').rsplit('/').next().unwrap_or(p)
}

/// `/x/kernels/py311/kernel.json argv[0] = "..."` → `py311`.
fn kernel_name(detail: &str) -> String {
    let file = detail.split(" argv[0]").next().unwrap_or(detail);
    let dir = file.trim_end_matches("/kernel.json");
    basename(dir).to_string()
}

struct Candidate<'a> {
    roles: BTreeMap<String, u32>,
    path: &'a str,
    kind: PythonKind,
    version: Option<&'a str>,
}

/// Roles that name one environment (a project's venv, a named conda env, a pyenv version, the
/// active env): two interpreters with such roles but none in common are different environments,
/// whatever else (PATH) they share.
const IDENTITY: u32 = 80;

fn score(a: &Candidate, b: &Candidate) -> u32 {
    let same_path = a.path == b.path;
    let shared = |min: u32| {
        a.roles
            .iter()
            .filter(|(k, w)| **w >= min && b.roles.contains_key(*k))
            .map(|(k, w)| (*w).max(b.roles[k]))
            .sum::<u32>()
    };
    let has_identity = |c: &Candidate| c.roles.values().any(|w| *w >= IDENTITY);
    let known = |k: PythonKind| k != PythonKind::Unknown;
    if !same_path && shared(IDENTITY) == 0 {
        // A venv is not the system python even when both are "the PATH python".
        if known(a.kind) && known(b.kind) && a.kind != b.kind {
            return 0;
        }
        if has_identity(a) && has_identity(b) {
            return 0;
        }
    }
    let mut s = shared(0);
    if same_path {
        s += 150;
    }
    if s == 0 {
        return 0;
    }
    if a.kind == b.kind {
        s += 5;
    }
    if a.version.is_some() && a.version == b.version {
        s += 3;
    }
    s
}

/// A group being built: the candidate it was founded with (widened by its members' roles), and
/// for each machine the index of its member there.
type Group<'a> = (Candidate<'a>, Vec<Option<usize>>);

/// Cluster the interpreters of `snaps` (in order) into cross-machine groups.
pub fn match_interpreters(snaps: &[&Snapshot]) -> Matching {
    // Each group keeps the candidate it was founded with, widened by its members' roles.
    let mut groups: Vec<Group> = Vec::new();
    let n = snaps.len();
    for (m, snap) in snaps.iter().enumerate() {
        let cands = candidates(snap);
        let assigned = assign(&groups, &cands);
        for (pi, c) in cands.into_iter().enumerate() {
            match assigned[pi] {
                Some(gi) => {
                    let g = &mut groups[gi];
                    g.1[m] = Some(pi);
                    for (k, w) in c.roles {
                        g.0.roles.entry(k).or_insert(w);
                    }
                }
                None => {
                    let mut members = vec![None; n];
                    members[m] = Some(pi);
                    groups.push((c, members));
                }
            }
        }
    }
    label_groups(snaps, &groups)
}

/// The interpreters of `snap` with their roles, path, kind and version.
fn candidates(snap: &Snapshot) -> Vec<Candidate<'_>> {
    roles(snap)
        .into_iter()
        .zip(&snap.pythons)
        .map(|(roles, py)| Candidate {
            roles,
            path: &py.path,
            kind: py.kind,
            version: py.version.as_deref(),
        })
        .collect()
}

/// For each candidate, the group it joins: pairs taken greedily, best score first, each group
/// and each candidate at most once.
fn assign(groups: &[Group], cands: &[Candidate]) -> Vec<Option<usize>> {
    let mut pairs: Vec<(u32, usize, usize)> = Vec::new();
    for (gi, (g, _)) in groups.iter().enumerate() {
        for (pi, c) in cands.iter().enumerate() {
            let s = score(g, c);
            if s > 0 {
                pairs.push((s, gi, pi));
            }
        }
    }
    pairs.sort_by(|x, y| y.0.cmp(&x.0).then(x.1.cmp(&y.1)).then(x.2.cmp(&y.2)));
    let mut used_g = HashSet::new();
    let mut used_p = vec![false; cands.len()];
    let mut assigned: Vec<Option<usize>> = vec![None; cands.len()];
    for (_, gi, pi) in pairs {
        if used_g.contains(&gi) || used_p[pi] {
            continue;
        }
        used_g.insert(gi);
        used_p[pi] = true;
        assigned[pi] = Some(gi);
    }
    assigned
}

/// Labels: the founder's best role (highest weight, then name), else its home-less path; a
/// label taken before gets `#2`, `#3`, ...
fn label_groups(snaps: &[&Snapshot], groups: &[Group]) -> Matching {
    let mut taken: HashMap<String, usize> = HashMap::new();
    let mut out = Matching {
        labels: snaps
            .iter()
            .map(|s| vec![String::new(); s.pythons.len()])
            .collect(),
        groups: Vec::new(),
    };
    for (g, members) in groups {
        let mut roles: Vec<(&String, &u32)> = g.roles.iter().collect();
        roles.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let base = roles
            .first()
            .map(|(k, _)| (*k).clone())
            .unwrap_or_else(|| homeless(g.path));
        let count = taken.entry(base.clone()).or_insert(0);
        *count += 1;
        let label = if *count == 1 {
            base
        } else {
            format!("{base}#{count}")
        };
        for (m, pi) in members.iter().enumerate() {
            if let Some(pi) = pi {
                out.labels[m][*pi] = label.clone();
            }
        }
        out.groups.push(InterpreterGroup {
            label,
            roles: roles.iter().map(|(k, _)| (*k).clone()).collect(),
            members: members
                .iter()
                .enumerate()
                .map(|(m, pi)| pi.map(|pi| snaps[m].pythons[pi].path.clone()))
                .collect(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::python::{Python, Source};

    fn py(path: &str, kind: PythonKind, version: &str, sources: &[(SourceKind, &str)]) -> Python {
        Python {
            path: path.into(),
            kind,
            version: Some(version.into()),
            exists: true,
            sources: sources
                .iter()
                .map(|(k, d)| Source::from_detail(*k, d))
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn venvs_line_up_across_home_dirs_even_when_only_one_is_on_path() {
        let mut a = Snapshot::empty();
        a.pythons = vec![
            py(
                "/home/alice/proj/.venv/bin/python",
                PythonKind::Venv,
                "3.11.7",
                &[
                    (
                        SourceKind::Path,
                        "python3 (PATH entry 0: /home/alice/proj/.venv/bin)",
                    ),
                    (SourceKind::ProjectVenv, "/home/alice/proj/.venv"),
                ],
            ),
            py(
                "/usr/bin/python3",
                PythonKind::System,
                "3.11.2",
                &[
                    (SourceKind::Path, "python3 (PATH entry 3: /usr/bin)"),
                    (SourceKind::System, "/usr/bin/python3"),
                ],
            ),
        ];
        let mut b = Snapshot::empty();
        b.pythons = vec![
            py(
                "/home/bob/work/.venv/bin/python",
                PythonKind::Venv,
                "3.11.9",
                &[(SourceKind::ProjectVenv, "/home/bob/work/.venv")],
            ),
            py(
                "/usr/bin/python3",
                PythonKind::System,
                "3.11.2",
                &[
                    (SourceKind::Path, "python3 (PATH entry 0: /usr/bin)"),
                    (SourceKind::System, "/usr/bin/python3"),
                ],
            ),
            py(
                "/opt/conda/envs/ml/bin/python",
                PythonKind::Conda,
                "3.10.4",
                &[(SourceKind::CondaEnv, "/opt/conda/envs/ml")],
            ),
        ];
        let m = match_interpreters(&[&a, &b]);
        assert_eq!(m.labels[0], vec!["project-venv:.venv", "system:python3"]);
        assert_eq!(
            m.labels[1],
            vec!["project-venv:.venv", "system:python3", "conda-env:ml"]
        );
        assert_eq!(m.groups.len(), 3);
        assert_eq!(
            m.groups[2].members,
            vec![None, Some("/opt/conda/envs/ml/bin/python".into())]
        );
    }

    #[test]
    fn path_role_goes_to_the_first_path_entry_only() {
        let mut a = Snapshot::empty();
        a.pythons = vec![
            py(
                "/a/python3",
                PythonKind::Unknown,
                "3.11",
                &[(SourceKind::Path, "python3 (PATH entry 4: /a)")],
            ),
            py(
                "/b/python3",
                PythonKind::Unknown,
                "3.12",
                &[(SourceKind::Path, "python3 (PATH entry 1: /b)")],
            ),
        ];
        let r = roles(&a);
        assert!(r[0].is_empty());
        assert_eq!(r[1].keys().collect::<Vec<_>>(), vec!["PATH:python3"]);
        assert_eq!(
            kernel_name("/u/share/jupyter/kernels/py311/kernel.json argv[0] = \"x\""),
            "py311"
        );
    }

    #[test]
    fn different_environments_on_path_do_not_match() {
        let mut a = Snapshot::empty();
        a.pythons = vec![py(
            "/home/u/proj/.venv/bin/python",
            PythonKind::Venv,
            "3.10.4",
            &[
                (
                    SourceKind::Path,
                    "python3 (PATH entry 0: /home/u/proj/.venv/bin)",
                ),
                (SourceKind::ProjectVenv, "/home/u/proj/.venv"),
            ],
        )];
        let mut b = Snapshot::empty();
        b.pythons = vec![
            py(
                "/usr/bin/python3",
                PythonKind::System,
                "3.11.2",
                &[(SourceKind::Path, "python3 (PATH entry 0: /usr/bin)")],
            ),
            py(
                "/c/envs/ml/bin/python",
                PythonKind::Conda,
                "3.10.4",
                &[(SourceKind::CondaEnv, "/c/envs/ml")],
            ),
        ];
        let m = match_interpreters(&[&a, &b]);
        assert_eq!(m.groups.len(), 3, "{:?}", m.groups);
        // Two conda envs with different names, both first on PATH, are different envs.
        let mut c = Snapshot::empty();
        let mut ml = py(
            "/c/envs/ml/bin/python",
            PythonKind::Conda,
            "3.10.4",
            &[(SourceKind::Path, "python (PATH entry 0: /c/envs/ml/bin)")],
        );
        ml.conda_env = Some("ml".into());
        c.pythons = vec![ml];
        let mut d = Snapshot::empty();
        let mut tf = py(
            "/c/envs/tf/bin/python",
            PythonKind::Conda,
            "3.10.4",
            &[(SourceKind::Path, "python (PATH entry 0: /c/envs/tf/bin)")],
        );
        tf.conda_env = Some("tf".into());
        d.pythons = vec![tf];
        assert_eq!(match_interpreters(&[&c, &d]).groups.len(), 2);
        // The same conda env on two machines, different prefixes, matches by name.
        let mut e = Snapshot::empty();
        let mut ml2 = py(
            "/opt/conda/envs/ml/bin/python",
            PythonKind::Conda,
            "3.10.4",
            &[],
        );
        ml2.conda_env = Some("ml".into());
        e.pythons = vec![ml2];
        assert_eq!(match_interpreters(&[&c, &e]).groups.len(), 1);
    }
}
