//! `pylock.toml` and `pylock.<name>.toml` (PEP 751, `lock-version = "1.0"`): a flat list of
//! packages, each with its own marker; the installer takes those whose marker holds. Its source
//! is one of `vcs`, `directory`, `archive`, or an `index` with `sdist`/`wheels`. Markers that
//! name `extras` or `dependency_groups` (PEP 751's additions) are evaluated with none selected
//! but the lock's `default-groups`.

use super::model::{toml_error, Locked, Src, Target};
use serde::Deserialize;
use toml::Spanned;

#[derive(Deserialize)]
struct File {
    #[serde(rename = "lock-version")]
    lock_version: Option<String>,
    #[serde(default, rename = "default-groups")]
    default_groups: Vec<String>,
    #[serde(default)]
    packages: Vec<Package>,
}

#[derive(Deserialize)]
struct Package {
    name: Spanned<String>,
    version: Option<Spanned<String>>,
    marker: Option<String>,
    index: Option<String>,
    vcs: Option<toml::Table>,
    directory: Option<toml::Table>,
    archive: Option<toml::Table>,
}

/// Read `text` (a `pylock.toml`) for `target`.
pub fn read(text: &str, target: &Target) -> Result<Locked, String> {
    let lines = super::model::Lines::new(text);
    let file: File = toml::from_str(text).map_err(|e| toml_error("pylock.toml", text, &e))?;
    match file.lock_version.as_deref() {
        Some(v) if v.split('.').next() == Some("1") => {}
        Some(v) => {
            return Err(format!(
                "lock-version {v} is not one envdoctor reads (it reads 1.x, PEP 751)"
            ))
        }
        None => return Err("not a pylock.toml: it has no `lock-version`".into()),
    }
    let mut out = Locked::default();
    for p in &file.packages {
        let marker = p.marker.as_deref().unwrap_or("");
        let holds = if marker.contains("dependency_groups") || marker.contains("extras") {
            // PEP 751 marker variables pep508 does not know: select the default groups only.
            Ok(file.default_groups.iter().any(|g| {
                marker.contains(&format!("'{g}'")) || marker.contains(&format!("\"{g}\""))
            }))
        } else {
            target.holds(marker)
        };
        out.pin_where(holds, &lines, &p.name, p.version.as_ref(), || source(p));
    }
    Ok(out)
}

fn source(p: &Package) -> Src {
    let s = |t: &toml::Table, k: &str| t.get(k).and_then(|v| v.as_str()).map(str::to_string);
    if let Some(v) = &p.vcs {
        return Src::Git(s(v, "url").or_else(|| s(v, "path")).unwrap_or_default());
    }
    if let Some(d) = &p.directory {
        let path = s(d, "path").unwrap_or_default();
        let editable = d.get("editable").and_then(|e| e.as_bool()) == Some(true);
        return if editable {
            Src::Editable(path)
        } else {
            Src::Path(path)
        };
    }
    if let Some(a) = &p.archive {
        return match s(a, "url") {
            Some(u) => Src::Url(u),
            None => Src::Path(s(a, "path").unwrap_or_default()),
        };
    }
    Src::Index(p.index.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = include_str!("../../../fixtures/locks/uv/pylock.toml");

    #[test]
    fn the_real_export_selects_by_marker() {
        let l = read(FIXTURE, &Target::linux(Some("3.11.7"), "x86_64")).unwrap();
        let got = l.pins("-");
        assert_eq!(
            got,
            [
                "demo -",
                "iniconfig 2.3.1",
                "packaging 26.4",
                "six 1.17.0",
                "urllib3 2.8.0"
            ]
        );
        assert_eq!(l.entries[0].source, Src::Editable(".".into()));
        let six = &l.entries[3];
        assert_eq!(
            FIXTURE.lines().nth(six.line - 1),
            Some("version = \"1.17.0\"")
        );
        assert_eq!(
            six.source,
            Src::Index(Some("https://pypi.org/simple".into()))
        );
        let old = read(FIXTURE, &Target::linux(Some("3.10.4"), "x86_64")).unwrap();
        assert!(old.entries.iter().any(|e| e.name == "tomli"));
    }

    #[test]
    fn other_versions_and_shapes_are_refused_by_name() {
        let t = Target::linux(Some("3.11"), "x86_64");
        let e = read("lock-version = \"2.0\"\n", &t).unwrap_err();
        assert!(e.contains("lock-version 2.0"), "{e}");
        let e = read(
            "lock-version = \"1.0\"\n[[packages]]\nversion = \"1\"\n",
            &t,
        )
        .unwrap_err();
        assert!(e.contains("pylock.toml") && e.contains("name"), "{e}");
    }
}
