//! `pdm.lock` (PDM, `[metadata] lock_version` 4.x): `[[package]]` entries with `groups` (the
//! dependency groups that pull them in: `default`, `dev`, …) and an already-combined `marker`.
//! `pdm sync` installs the `default` group and the dev groups (`pdm sync --prod` leaves those
//! out); a package is kept when one of its groups is installed and its marker holds. Sources:
//! `path`/`url`/`git` with `editable`, else the index.

use super::model::{toml_error, Locked, Src, Target};
use serde::Deserialize;
use toml::Spanned;

#[derive(Deserialize)]
struct File {
    metadata: Option<Metadata>,
    #[serde(default)]
    package: Vec<Package>,
}

#[derive(Deserialize)]
struct Metadata {
    lock_version: Option<String>,
}

#[derive(Deserialize)]
struct Package {
    name: Spanned<String>,
    version: Option<Spanned<String>>,
    #[serde(default)]
    groups: Vec<String>,
    marker: Option<String>,
    path: Option<String>,
    url: Option<String>,
    git: Option<String>,
    revision: Option<String>,
    #[serde(default)]
    editable: bool,
}

/// Read `text` (a `pdm.lock`) for `target`; `prod` leaves the dev groups out.
pub fn read(text: &str, target: &Target, prod: bool) -> Result<Locked, String> {
    let lines = super::model::Lines::new(text);
    let file: File = toml::from_str(text).map_err(|e| toml_error("pdm.lock", text, &e))?;
    let version = file.metadata.and_then(|m| m.lock_version);
    match version.as_deref().and_then(|v| v.split('.').next()) {
        Some("4") => {}
        Some(_) => {
            return Err(format!(
                "lock_version {} is not one envdoctor reads (it reads 4.x)",
                version.unwrap_or_default()
            ))
        }
        None => return Err("not a pdm.lock: it has no `[metadata] lock_version`".into()),
    }
    let mut out = Locked::default();
    for p in &file.package {
        let on = p.groups.is_empty() || p.groups.iter().any(|g| g == "default" || !prod);
        if !on {
            continue;
        }
        let holds = target.holds(p.marker.as_deref().unwrap_or(""));
        out.pin_where(holds, &lines, &p.name, p.version.as_ref(), || source(p));
    }
    Ok(out)
}

fn source(p: &Package) -> Src {
    let checkout = Src::checkout(
        p.git.as_ref(),
        p.revision.as_ref(),
        p.path.as_ref(),
        p.editable,
    );
    checkout
        .or_else(|| p.url.clone().map(Src::Url))
        .unwrap_or(Src::Index(None))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = include_str!("../../../fixtures/locks/pdm/pdm.lock");

    #[test]
    fn the_real_lock_groups_and_markers() {
        let t = Target::linux(Some("3.11.7"), "x86_64");
        let l = read(FIXTURE, &t, false).unwrap();
        let got = l.pins("-");
        assert_eq!(
            got,
            [
                "iniconfig 2.1.0",
                "packaging 26.3",
                "six 1.17.0",
                "urllib3 2.6.3"
            ]
        );
        let six = &l.entries[2];
        assert_eq!(
            FIXTURE.lines().nth(six.line - 1),
            Some("version = \"1.17.0\"")
        );
        let prod = read(FIXTURE, &t, true).unwrap();
        assert!(!prod.entries.iter().any(|e| e.name == "iniconfig"));
        let old = read(FIXTURE, &Target::linux(Some("3.10.2"), "x86_64"), true).unwrap();
        assert!(old.entries.iter().any(|e| e.name == "tomli"));
    }

    #[test]
    fn another_lock_version_is_refused() {
        let t = Target::linux(Some("3.11"), "x86_64");
        let e = read("[metadata]\nlock_version = \"5.0\"\n", &t, false).unwrap_err();
        assert!(e.contains("lock_version 5.0"), "{e}");
    }
}
