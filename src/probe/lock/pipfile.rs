//! `Pipfile.lock` (Pipenv, `pipfile-spec` 6): JSON with `default` (what `pipenv sync` installs)
//! and `develop` (with `--dev`) sections, each package with `version` (`==1.17.0`), `markers`,
//! `index` (a name from `_meta.sources`), or `file`/`path`/`git`/`editable`. serde_json keeps no
//! positions, so the line of a pin is the line of its `"name": {` key in the text.

use super::model::{applies, normalize, Entry, Locked, Src, Target};
use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Deserialize)]
struct File {
    #[serde(rename = "_meta")]
    meta: Meta,
    #[serde(default)]
    default: BTreeMap<String, Package>,
    #[serde(default)]
    develop: BTreeMap<String, Package>,
}

#[derive(Deserialize)]
struct Meta {
    #[serde(rename = "pipfile-spec")]
    spec: Option<i64>,
    #[serde(default)]
    sources: Vec<Source>,
}

#[derive(Deserialize)]
struct Source {
    name: Option<String>,
    url: Option<String>,
}

#[derive(Deserialize)]
struct Package {
    version: Option<String>,
    markers: Option<String>,
    index: Option<String>,
    file: Option<String>,
    path: Option<String>,
    git: Option<String>,
    #[serde(rename = "ref")]
    reference: Option<String>,
    #[serde(default)]
    editable: bool,
}

/// Read `text` (a `Pipfile.lock`) for `target`; `dev` adds the `develop` section.
pub fn read(text: &str, target: &Target, dev: bool) -> Result<Locked, String> {
    let file: File =
        serde_json::from_str(text).map_err(|e| format!("not a valid Pipfile.lock: {e}"))?;
    match file.meta.spec {
        Some(6) => {}
        Some(v) => {
            return Err(format!(
                "pipfile-spec {v} is not one envdoctor reads (it reads 6)"
            ))
        }
        None => return Err("not a Pipfile.lock: `_meta` has no `pipfile-spec`".into()),
    }
    let mut out = Locked::default();
    let mut sections = vec![("default", &file.default)];
    if dev {
        sections.push(("develop", &file.develop));
    } else {
        out.also_locked = file.develop.keys().map(|n| normalize(n)).collect();
    }
    for (section, pkgs) in sections {
        let start = section_start(text, section);
        for (name, p) in pkgs {
            let holds = target.holds(p.markers.as_deref().unwrap_or(""));
            if !applies(holds, &mut out.warnings, || format!("{section}.{name}: ")) {
                continue;
            }
            let (version, spec) = match p.version.as_deref().map(str::trim) {
                Some(v) if v.starts_with("==") && !v.ends_with(".*") => {
                    (Some(v.trim_start_matches('=').to_string()), None)
                }
                Some("*") | None => (None, None),
                Some(v) => (None, Some(v.to_string())),
            };
            out.entries.push(Entry {
                name: normalize(name),
                version,
                spec,
                line: key_line(text, start, name),
                source: source(p, &file.meta.sources),
                ..Entry::default()
            });
        }
    }
    Ok(out)
}

fn source(p: &Package, sources: &[Source]) -> Src {
    if let Some(s) = Src::checkout(
        p.git.as_ref(),
        p.reference.as_ref(),
        p.path.as_ref(),
        p.editable,
    ) {
        return s;
    }
    if let Some(f) = &p.file {
        return Src::Url(f.clone());
    }
    let url = p.index.as_ref().and_then(|i| {
        sources
            .iter()
            .find(|s| s.name.as_deref() == Some(i))
            .and_then(|s| s.url.clone())
    });
    Src::Index(url.or_else(|| sources.first().and_then(|s| s.url.clone())))
}

/// Byte offset of `"section": {` (0 when absent).
fn section_start(text: &str, section: &str) -> usize {
    text.find(&format!("\"{section}\": {{")).unwrap_or(0)
}

/// The line of `"name": {` after `start` (the pin's own block).
fn key_line(text: &str, start: usize, name: &str) -> usize {
    let key = format!("\"{name}\":");
    let at = text
        .get(start..)
        .and_then(|t| t.find(&key))
        .map_or(0, |i| start + i);
    super::model::line_of(text, at)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = include_str!("../../../fixtures/locks/pipenv/Pipfile.lock");

    #[test]
    fn the_real_lock_default_and_develop() {
        let t = Target::linux(Some("3.11.7"), "x86_64");
        let l = read(FIXTURE, &t, false).unwrap();
        let got = l.pins("-");
        assert_eq!(got, ["packaging 26.4", "six 1.17.0", "urllib3 2.8.0"]);
        let six = &l.entries[1];
        assert_eq!(
            FIXTURE.lines().nth(six.line - 1).map(str::trim),
            Some("\"six\": {")
        );
        assert_eq!(
            six.source,
            Src::Index(Some("https://pypi.org/simple".into()))
        );
        // `pipenv sync` leaves `develop` out, and `pipenv clean` keeps it: locked, not drift.
        assert_eq!(l.also_locked, ["iniconfig"]);
        let dev = read(FIXTURE, &t, true).unwrap();
        assert!(dev.entries.iter().any(|e| e.name == "iniconfig"));
        assert!(dev.also_locked.is_empty());
        let old = read(FIXTURE, &Target::linux(Some("3.10.1"), "x86_64"), false).unwrap();
        assert!(old.entries.iter().any(|e| e.name == "tomli"));
    }

    #[test]
    fn wrong_shapes_are_refused() {
        let t = Target::linux(Some("3.11"), "x86_64");
        assert!(read("{}", &t, false).unwrap_err().contains("Pipfile.lock"));
        let e = read("{\"_meta\": {\"pipfile-spec\": 7}}", &t, false).unwrap_err();
        assert!(e.contains("pipfile-spec 7"), "{e}");
        assert!(read(
            "{\"_meta\": {\"pipfile-spec\": 6}, \"default\": []}",
            &t,
            false
        )
        .is_err());
    }
}
