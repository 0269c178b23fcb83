//! `poetry.lock` (Poetry 1.x and 2.x, `[metadata] lock-version` 1.x and 2.x): one version per
//! package for every platform, with the marker under which it is installed already worked out
//! (`markers`, a string, or in Poetry 2 a table by group). `poetry install` installs the
//! packages of the main group and every non-optional group; `optional = true` packages only with
//! their extra (not selected here). Sources: `[package.source]` of type `legacy` (an index),
//! `url`, `file`, `directory` (`develop = true`: editable) or `git`.

use super::model::{line_of, normalize, toml_error, Entry, Locked, Src, Target};
use serde::Deserialize;
use toml::Spanned;

#[derive(Deserialize)]
struct File {
    #[serde(default)]
    package: Vec<Package>,
    metadata: Option<Metadata>,
}

#[derive(Deserialize)]
struct Metadata {
    #[serde(rename = "lock-version")]
    lock_version: Option<String>,
}

#[derive(Deserialize)]
struct Package {
    name: Spanned<String>,
    version: Spanned<String>,
    #[serde(default)]
    optional: bool,
    groups: Option<Vec<String>>,
    markers: Option<toml::Value>,
    source: Option<Source>,
    #[serde(default)]
    develop: bool,
}

#[derive(Deserialize)]
struct Source {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    resolved_reference: Option<String>,
}

/// Read `text` (a `poetry.lock`) for `target`, leaving out the packages only in `optional`
/// groups (`[tool.poetry.group.X] optional = true`).
pub fn read(text: &str, target: &Target, optional_groups: &[String]) -> Result<Locked, String> {
    let lines = super::model::Lines::new(text);
    let file: File = toml::from_str(text).map_err(|e| toml_error("poetry.lock", text, &e))?;
    let version = file.metadata.as_ref().and_then(|m| m.lock_version.clone());
    match version.as_deref().and_then(|v| v.split('.').next()) {
        Some("1") | Some("2") => {}
        Some(_) => {
            return Err(format!(
                "lock-version {} is not one envdoctor reads (it reads 1.x and 2.x)",
                version.unwrap_or_default()
            ))
        }
        None => return Err("not a poetry.lock: it has no `[metadata] lock-version`".into()),
    }
    let mut out = Locked::default();
    for p in &file.package {
        if p.optional {
            continue;
        }
        let groups = p.groups.clone().unwrap_or_else(|| vec!["main".into()]);
        let on: Vec<&String> = groups
            .iter()
            .filter(|g| !optional_groups.iter().any(|o| o == *g))
            .collect();
        if on.is_empty() {
            continue;
        }
        let markers: Vec<String> = match &p.markers {
            None => vec![String::new()],
            Some(toml::Value::String(s)) => vec![s.clone()],
            Some(toml::Value::Table(t)) => on
                .iter()
                .map(|g| {
                    t.get(g.as_str())
                        .and_then(|v| v.as_str())
                        .unwrap_or("")
                        .to_string()
                })
                .collect(),
            Some(_) => vec![String::new()],
        };
        let mut holds = false;
        for m in &markers {
            match target.holds(m) {
                Ok(h) => holds |= h,
                Err(e) => out
                    .warnings
                    .push(format!("line {}: {e}", line_of(text, p.name.span().start))),
            }
        }
        if !holds {
            continue;
        }
        out.entries.push(Entry {
            name: normalize(p.name.get_ref()),
            version: Some(p.version.get_ref().clone()),
            line: lines.of(p.version.span().start),
            source: source(p),
            ..Entry::default()
        });
    }
    Ok(out)
}

fn source(p: &Package) -> Src {
    let Some(s) = &p.source else {
        return Src::Index(None);
    };
    match s.kind.as_str() {
        "legacy" => Src::Index(Some(s.url.clone())),
        "url" => Src::Url(s.url.clone()),
        "file" => Src::Path(s.url.clone()),
        "directory" if p.develop => Src::Editable(s.url.clone()),
        "directory" => Src::Path(s.url.clone()),
        "git" => Src::Git(match &s.resolved_reference {
            Some(r) => format!("{}@{r}", s.url),
            None => s.url.clone(),
        }),
        _ => Src::Index(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = include_str!("../../../fixtures/locks/poetry/poetry.lock");

    #[test]
    fn the_real_lock_selects_groups_and_markers() {
        let t = Target::linux(Some("3.11.7"), "x86_64");
        let l = read(FIXTURE, &t, &[]).unwrap();
        let got: Vec<&str> = l.entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(got, ["iniconfig", "packaging", "six", "urllib3"]);
        let six = &l.entries[2];
        assert_eq!(
            FIXTURE.lines().nth(six.line - 1),
            Some("version = \"1.17.0\"")
        );
        assert_eq!(
            six.source,
            Src::Index(Some("https://pypi.org/simple".into()))
        );
        let no_dev = read(FIXTURE, &t, &["dev".into()]).unwrap();
        assert!(!no_dev.entries.iter().any(|e| e.name == "iniconfig"));
        let old = read(FIXTURE, &Target::linux(Some("3.10.2"), "x86_64"), &[]).unwrap();
        assert!(old.entries.iter().any(|e| e.name == "tomli"));
    }

    #[test]
    fn another_lock_version_is_refused() {
        let t = Target::linux(Some("3.11"), "x86_64");
        let e = read("[metadata]\nlock-version = \"3.0\"\n", &t, &[]).unwrap_err();
        assert!(e.contains("lock-version 3.0"), "{e}");
        assert!(read("[[package]]\nname = \"x\"\n", &t, &[]).is_err());
    }
}
