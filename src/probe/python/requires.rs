//! A static `pip check`: the `Requires-Dist` entries of an interpreter's installed distributions
//! that the interpreter does not satisfy, without running Python or pip.
//!
//! As pip does, only the copy of each distribution that `import` sees (the first on `sys.path`)
//! is checked and satisfies requirements; environment markers are evaluated for this
//! interpreter (`python_version`, `python_full_version`, Linux, CPython, the machine's
//! architecture); requirements that apply only under an extra (`; extra == "gpu"`) are skipped,
//! because nothing records which extras were asked for at install time; pre-releases satisfy a
//! specifier (pip checks with `prereleases=True`); a URL requirement (`name @ url`) only needs
//! the name installed.

use crate::snapshot::python::{Package, Python, UnmetRequirement};
use pep440_rs::Version;
use pep508_rs::{MarkerEnvironment, MarkerEnvironmentBuilder, Requirement, VersionOrUrl};
use std::collections::BTreeMap;
use std::str::FromStr;

/// The architecture used for `platform_machine` markers when the machine's is not known.
pub const DEFAULT_MACHINE: &str = "x86_64";

/// The marker environment of a CPython `version` (`3.11.7`, or `3.11`) on Linux `machine`.
/// `None` when the version is not a version.
pub fn marker_environment(version: &str, machine: &str) -> Option<MarkerEnvironment> {
    let full = Version::from_str(version).ok()?;
    let release = full.release();
    let minor = format!(
        "{}.{}",
        release.first().copied().unwrap_or(0),
        release.get(1).copied().unwrap_or(0)
    );
    MarkerEnvironment::try_from(MarkerEnvironmentBuilder {
        implementation_name: "cpython",
        implementation_version: version,
        os_name: "posix",
        platform_machine: machine,
        platform_python_implementation: "CPython",
        platform_release: "",
        platform_system: "Linux",
        platform_version: "",
        python_full_version: version,
        python_version: &minor,
        sys_platform: "linux",
    })
    .ok()
}

/// The unmet requirements of `py`'s packages. With no known Python version only requirements
/// without markers are checked (a marker cannot be evaluated).
pub fn unmet(py: &Python, machine: &str) -> Vec<UnmetRequirement> {
    unmet_checked(py, machine).0
}

/// [`unmet`], and the lines that could not be checked: (the metadata file, why).
pub fn unmet_checked(py: &Python, machine: &str) -> (Vec<UnmetRequirement>, Vec<(String, String)>) {
    let env = py
        .version
        .as_deref()
        .and_then(|v| marker_environment(v, machine));
    // The copy of each name that `import` sees.
    let visible: BTreeMap<&str, &Package> = py.visible_packages();
    let mut out = Vec::new();
    let mut problems = Vec::new();
    for pkg in visible.values() {
        for raw in &pkg.requires {
            match parse(raw) {
                Ok(Some(req)) => {
                    if let Some(u) = check(pkg, raw, &req, env.as_ref(), &visible) {
                        out.push(u);
                    }
                }
                Ok(None) => {}
                Err(why) => problems.push((
                    pkg.metadata.clone(),
                    format!("requirement {:?} was not checked: {why}", short(raw.trim())),
                )),
            }
        }
    }
    out.sort_by(|a, b| (&a.package, &a.required).cmp(&(&b.package, &b.required)));
    (out, problems)
}

/// Deepest parenthesis nesting accepted in a marker: the parser recurses once per level, and
/// real markers stay below 5.
pub const MAX_MARKER_DEPTH: usize = 32;

/// Longest requirement line parsed (real ones stay far below).
pub const MAX_REQUIREMENT_LEN: usize = 16 * 1024;

/// Parse one `Requires-Dist` line. `Ok(None)`: not a requirement (pip skips such lines with a
/// warning, and so do we). `Err`: a line that would take the parser down (a name ending in `.`,
/// `-` or `_` before another character makes `pep508_rs` 0.9 panic; thousands of nested
/// parentheses overflow the stack), said so that the caller can name the file.
pub fn parse(raw: &str) -> Result<Option<Requirement<pep508_rs::VerbatimUrl>>, String> {
    let line = raw.trim();
    if line.len() > MAX_REQUIREMENT_LEN {
        return Err(format!("longer than {} KiB", MAX_REQUIREMENT_LEN / 1024));
    }
    let name_end = line
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_')))
        .unwrap_or(line.len());
    if name_end > 0 && !line.as_bytes()[name_end - 1].is_ascii_alphanumeric() {
        return Err(format!(
            "the name {:?} does not end in a letter or digit (PEP 508)",
            &line[..name_end]
        ));
    }
    let mut depth = 0usize;
    let mut deepest = 0usize;
    for b in line.bytes() {
        match b {
            b'(' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b')' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    if deepest > MAX_MARKER_DEPTH {
        return Err(format!(
            "parentheses nested {deepest} deep (at most {MAX_MARKER_DEPTH} are read)"
        ));
    }
    // Backstop for parser panics not foreseen above: the line is refused, the probe goes on.
    match std::panic::catch_unwind(|| Requirement::<pep508_rs::VerbatimUrl>::from_str(line)) {
        Ok(Ok(r)) => Ok(Some(r)),
        Ok(Err(_)) => Ok(None),
        Err(_) => Err("the PEP 508 parser failed on it".into()),
    }
}

fn short(s: &str) -> String {
    if s.len() <= 80 {
        return s.to_string();
    }
    let mut end = 80;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// Keep at most `keep` of `all` (sorted as [`unmet`] sorts them): version conflicts (the
/// required distribution is installed, at a version that does not match) before missing ones,
/// each kind in sorted order; returns the kept list, re-sorted, and how many were left out.
pub fn bounded(mut all: Vec<UnmetRequirement>, keep: usize) -> (Vec<UnmetRequirement>, usize) {
    if all.len() <= keep {
        return (all, 0);
    }
    let omitted = all.len() - keep;
    // A stable sort keeps the (package, required) order within each kind.
    all.sort_by_key(|u| u.installed.is_none());
    all.truncate(keep);
    // Truncating keeps the capacity of every unmet line: held by each interpreter until the
    // snapshot is written, that was half of a 200 x 1,000 snapshot's memory.
    all.shrink_to_fit();
    all.sort_by(|a, b| (&a.package, &a.required).cmp(&(&b.package, &b.required)));
    (all, omitted)
}

/// One `Requires-Dist` line of `pkg` against the installed distributions: `Some` when unmet.
/// Lines that do not parse are not reported (pip skips them too, with a warning).
fn check(
    pkg: &Package,
    raw: &str,
    req: &Requirement<pep508_rs::VerbatimUrl>,
    env: Option<&MarkerEnvironment>,
    installed: &BTreeMap<&str, &Package>,
) -> Option<UnmetRequirement> {
    match env {
        Some(env) => {
            if !req.evaluate_markers(env, &[]) {
                return None;
            }
        }
        None => {
            if !req.marker.is_true() {
                return None;
            }
        }
    }
    let required = req.name.to_string();
    let specifiers = match &req.version_or_url {
        Some(VersionOrUrl::VersionSpecifier(s)) => Some(s),
        _ => None,
    };
    let unmet = |installed: Option<String>| UnmetRequirement {
        package: pkg.name.clone(),
        version: pkg.version.clone(),
        requirement: raw.trim().to_string(),
        required: required.clone(),
        specifier: specifiers.map(|s| s.to_string()).filter(|s| !s.is_empty()),
        installed,
        needed_at: None,
    };
    let Some(have) = installed.get(required.as_str()) else {
        return Some(unmet(None));
    };
    // A bare name or a URL requirement is met by any installed version.
    let specifiers = specifiers?;
    // A version that is not PEP 440 cannot be compared; pip reports nothing for it either.
    let version = Version::from_str(have.version.trim()).ok()?;
    if specifiers.contains(&version) {
        None
    } else {
        Some(unmet(Some(have.version.clone())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::python::{Copy, Shadowed, SysPathOrigin};

    fn pkg(name: &str, version: &str, requires: &[&str]) -> Package {
        Package {
            name: name.into(),
            version: version.into(),
            version_valid: true,
            location: "/v/lib/python3.11/site-packages".into(),
            metadata: format!("/v/lib/python3.11/site-packages/{name}-{version}.dist-info"),
            requires: requires.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    fn py(version: Option<&str>, packages: Vec<Package>) -> Python {
        Python {
            path: "/v/bin/python".into(),
            exists: true,
            version: version.map(str::to_string),
            packages,
            ..Default::default()
        }
    }

    fn names(u: &[UnmetRequirement]) -> Vec<(String, String, Option<String>)> {
        u.iter()
            .map(|u| (u.package.clone(), u.required.clone(), u.installed.clone()))
            .collect()
    }

    #[test]
    fn a_wrong_version_and_a_missing_requirement_are_reported() {
        let p = py(
            Some("3.11.7"),
            vec![
                pkg(
                    "tensorflow",
                    "2.15.0",
                    &["numpy<2.0.0,>=1.23.5", "h5py>=2.9.0", "wrapt<1.15,>=1.11.0"],
                ),
                pkg("numpy", "2.1.3", &[]),
                pkg("h5py", "3.11.0", &["numpy>=1.17.3"]),
            ],
        );
        let u = unmet(&p, DEFAULT_MACHINE);
        assert_eq!(
            names(&u),
            vec![
                ("tensorflow".into(), "numpy".into(), Some("2.1.3".into())),
                ("tensorflow".into(), "wrapt".into(), None),
            ]
        );
        assert_eq!(u[0].specifier.as_deref(), Some(">=1.23.5, <2.0.0"));
        assert_eq!(u[0].requirement, "numpy<2.0.0,>=1.23.5");
        assert_eq!(u[0].version, "2.15.0");
        assert_eq!(u[1].specifier.as_deref(), Some(">=1.11.0, <1.15"));
    }

    #[test]
    fn a_flood_of_unmet_requirements_is_bounded_keeping_conflicts_first() {
        // 300 missing requirements from "aaa" plus one version conflict from "zzz": the conflict
        // sorts last but must survive the cap; the rest are counted, not listed.
        let missing: Vec<String> = (0..300).map(|i| format!("missing-{i:03}>=1")).collect();
        let missing: Vec<&str> = missing.iter().map(String::as_str).collect();
        let p = py(
            Some("3.11.7"),
            vec![
                pkg("aaa", "1.0", &missing),
                pkg("numpy", "2.1.3", &[]),
                pkg("zzz", "1.0", &["numpy<2"]),
            ],
        );
        let all = unmet(&p, DEFAULT_MACHINE);
        assert_eq!(all.len(), 301);
        let (kept, omitted) = bounded(all.clone(), 10);
        assert_eq!((kept.len(), omitted), (10, 291));
        assert_eq!(kept[9].package, "zzz");
        assert_eq!(kept[9].installed.as_deref(), Some("2.1.3"));
        assert_eq!(kept[0].required, "missing-000");
        assert_eq!(kept[8].required, "missing-008");
        // Under the cap nothing changes.
        assert_eq!(bounded(all.clone(), 301), (all, 0));
    }

    #[test]
    fn markers_are_evaluated_for_this_interpreter_and_extras_are_skipped() {
        let p = py(
            Some("3.10.12"),
            vec![pkg(
                "torch",
                "2.3.1",
                &[
                    "typing-extensions>=4.8.0",
                    "nvidia-cudnn-cu12==8.9.2.26; platform_system == \"Linux\" and platform_machine == \"x86_64\"",
                    "tomli; python_version < \"3.11\"",
                    "exceptiongroup; python_full_version >= \"3.12.0\"",
                    "colorama; sys_platform == \"win32\"",
                    "opt-einsum>=3.3; extra == \"opt-einsum\"",
                    "optree>=0.9.1; extra == \"optree\" and python_version >= \"3.8\"",
                    "pywin32; implementation_name != \"cpython\"",
                ],
            )],
        );
        let u = unmet(&p, "x86_64");
        let req: Vec<&str> = u.iter().map(|u| u.required.as_str()).collect();
        assert_eq!(req, ["nvidia-cudnn-cu12", "tomli", "typing-extensions"]);
        // On aarch64 the nvidia wheel is not required.
        let u = unmet(&p, "aarch64");
        let req: Vec<&str> = u.iter().map(|u| u.required.as_str()).collect();
        assert_eq!(req, ["tomli", "typing-extensions"]);
    }

    #[test]
    fn names_are_normalised_and_local_versions_and_prereleases_satisfy() {
        let p = py(
            Some("3.12.1"),
            vec![
                pkg(
                    "torchvision",
                    "0.19.0",
                    &["torch==2.4.0", "Pillow!=8.3.*,>=5.3.0", "Typing_Extensions"],
                ),
                pkg("torch", "2.4.0+cu121", &["sympy>=1.13rc1"]),
                pkg("pillow", "10.4.0", &[]),
                pkg("typing-extensions", "4.12.2", &[]),
                pkg("sympy", "1.13.0rc2", &[]),
            ],
        );
        assert_eq!(unmet(&p, DEFAULT_MACHINE), vec![]);
    }

    #[test]
    fn only_the_copy_import_sees_counts() {
        let mut user = pkg("six", "1.12.0", &[]);
        user.location = "/home/u/.local/lib/python3.11/site-packages".into();
        let mut p = py(
            Some("3.11.2"),
            vec![
                pkg("six", "1.16.0", &[]),
                user,
                pkg("python-dateutil", "2.9.0", &["six>=1.5,>=1.14"]),
            ],
        );
        // The venv's copy wins: satisfied.
        assert_eq!(unmet(&p, DEFAULT_MACHINE), vec![]);
        // The user-site copy wins: 1.12.0 does not satisfy >=1.14.
        p.shadowed = vec![Shadowed {
            name: "six".into(),
            winner: Copy {
                version: "1.12.0".into(),
                location: "/home/u/.local/lib/python3.11/site-packages".into(),
                origin: SysPathOrigin::UserSite,
            },
            hidden: vec![Copy {
                version: "1.16.0".into(),
                location: "/v/lib/python3.11/site-packages".into(),
                origin: SysPathOrigin::Site,
            }],
        }];
        assert_eq!(
            names(&unmet(&p, DEFAULT_MACHINE)),
            vec![(
                "python-dateutil".into(),
                "six".into(),
                Some("1.12.0".into())
            )]
        );
    }

    #[test]
    fn urls_unparsable_lines_and_invalid_versions() {
        let p = py(
            Some("3.11"),
            vec![
                pkg(
                    "app",
                    "1.0",
                    &[
                        "lib @ https://example.com/lib-1.0.tar.gz",
                        "other @ file:///src/other",
                        "this is not a requirement ((",
                        "weird>=2",
                    ],
                ),
                pkg("lib", "0.1", &[]),
                pkg("weird", "not-a-version", &[]),
            ],
        );
        assert_eq!(
            names(&unmet(&p, DEFAULT_MACHINE)),
            vec![("app".into(), "other".into(), None)]
        );
    }

    #[test]
    fn without_a_version_only_unconditional_requirements_are_checked() {
        let p = py(
            None,
            vec![pkg(
                "app",
                "1.0",
                &["a", "b; python_version < \"3.8\"", "c; extra == \"x\""],
            )],
        );
        assert_eq!(
            names(&unmet(&p, DEFAULT_MACHINE)),
            vec![("app".into(), "a".into(), None)]
        );
    }

    #[test]
    fn the_marker_environment_takes_a_minor_only_version() {
        let env = marker_environment("3.9", "x86_64").unwrap();
        let r = Requirement::<pep508_rs::VerbatimUrl>::from_str("a; python_version >= \"3.9\"")
            .unwrap();
        assert!(r.evaluate_markers(&env, &[]));
        assert!(marker_environment("not a version", "x86_64").is_none());
    }
}
