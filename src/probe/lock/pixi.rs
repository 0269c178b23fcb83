//! `pixi.lock` (pixi, via rattler_lock: `version` 4 to 7): `environments.<env>.packages.
//! <platform>` lists what `pixi install` puts in `.pixi/envs/<env>` as `- conda: <url>` and
//! `- pypi: <url or path>` references into the top-level `packages` list. Versions 6 and 7
//! name a conda package only by its file URL (`numpy-1.26.4-py311h64a7726_0.conda`: name,
//! version, build), unless the entry says `name`/`version`/`build` (source packages); 4 and
//! 5 write them out with `kind`. PyPI packages always carry `name` and `version`. The lock is
//! already solved per platform: no markers to evaluate.

use super::conda::{channel_of, conda_file_parts, pip_source, yaml};
use super::model::{normalize, Entry, Locked, Src, Target};
use serde::Deserialize;
use serde_saphyr::Spanned;
use std::collections::{BTreeMap, HashMap};

#[derive(Deserialize)]
struct File {
    version: Option<i64>,
    #[serde(default)]
    environments: BTreeMap<String, Environment>,
    #[serde(default)]
    packages: Vec<Spanned<Package>>,
}

#[derive(Deserialize)]
struct Environment {
    #[serde(default)]
    indexes: Vec<String>,
    #[serde(default)]
    packages: BTreeMap<String, Vec<Reference>>,
}

/// One entry of an environment's platform list.
#[derive(Deserialize)]
struct Reference {
    conda: Option<String>,
    pypi: Option<String>,
}

#[derive(Deserialize)]
struct Package {
    conda: Option<String>,
    pypi: Option<String>,
    /// Versions 4 and 5.
    kind: Option<String>,
    url: Option<String>,
    path: Option<String>,
    name: Option<String>,
    version: Option<Spanned<String>>,
    build: Option<String>,
    channel: Option<String>,
    index: Option<String>,
    #[serde(default)]
    editable: bool,
}

impl Package {
    /// `(is conda, its URL or path)`.
    fn key(&self) -> Option<(bool, &str)> {
        if let Some(u) = &self.conda {
            return Some((true, u));
        }
        if let Some(u) = &self.pypi {
            return Some((false, u));
        }
        let u = self.url.as_deref().or(self.path.as_deref())?;
        Some((self.kind.as_deref() != Some("pypi"), u))
    }
}

/// The pixi environment `.pixi/envs/<name>` is, from the interpreter's prefix.
pub fn environment_of(prefix: Option<&str>) -> String {
    prefix
        .and_then(|p| {
            let p = p.trim_end_matches('/');
            let (dir, name) = p.rsplit_once('/')?;
            dir.ends_with(".pixi/envs").then(|| name.to_string())
        })
        .unwrap_or_else(|| "default".to_string())
}

/// Read `text` (a `pixi.lock`) for `environment` on `target`'s conda platform.
pub fn read(text: &str, target: &Target, environment: &str) -> Result<Locked, String> {
    let file: File = yaml("pixi.lock", text)?;
    match file.version {
        Some(4..=7) => {}
        Some(v) => {
            return Err(format!(
                "version {v} is not one envdoctor reads (it reads pixi.lock 4 to 7)"
            ))
        }
        None => return Err("not a pixi.lock: it has no `version`".into()),
    }
    let env = file.environments.get(environment).ok_or_else(|| {
        format!("it has no environment `{environment}` (the job's interpreter is pixi's `{environment}`)")
    })?;
    let mut out = Locked::default();
    let Some(refs) = env.packages.get(&target.conda_platform) else {
        out.warnings.push(format!(
            "environment `{environment}` is not locked for {}",
            target.conda_platform
        ));
        return Ok(out);
    };
    let by_key: HashMap<(bool, &str), &Spanned<Package>> = file
        .packages
        .iter()
        .filter_map(|p| Some((p.value.key()?, p)))
        .collect();
    let index = env.indexes.first().map(String::as_str);
    for r in refs {
        let key = match (&r.conda, &r.pypi) {
            (Some(u), _) => (true, u.as_str()),
            (None, Some(u)) => (false, u.as_str()),
            (None, None) => continue,
        };
        let Some(p) = by_key.get(&key) else {
            out.warnings.push(format!(
                "`{}` is listed but has no entry in `packages`",
                key.1
            ));
            continue;
        };
        match entry(key, p, index) {
            Some(e) => out.entries.push(e),
            None => out.warnings.push(format!(
                "line {}: `{}` names no package and version",
                p.referenced.line(),
                key.1
            )),
        }
    }
    Ok(out)
}

/// One locked package from its `packages` entry.
fn entry((conda, url): (bool, &str), p: &Spanned<Package>, index: Option<&str>) -> Option<Entry> {
    let v = &p.value;
    let from_file = if conda { conda_file_parts(url) } else { None };
    let name = v
        .name
        .clone()
        .or_else(|| from_file.as_ref().map(|f| f.0.clone()))?;
    let version = v
        .version
        .as_ref()
        .map(|s| s.value.clone())
        .or_else(|| from_file.as_ref().map(|f| f.1.clone()))?;
    let line = v
        .version
        .as_ref()
        .map_or(p.referenced.line(), |s| s.referenced.line()) as usize;
    let source = if conda {
        Src::Index(v.channel.clone().or_else(|| channel_of(url)))
    } else if v.editable {
        Src::Editable(url.to_string())
    } else {
        pip_source(url, v.index.as_deref().or(index))
    };
    Some(Entry {
        name: if conda {
            name.to_lowercase()
        } else {
            normalize(&name)
        },
        version: Some(version),
        build: if conda {
            v.build.clone().or_else(|| from_file.map(|f| f.2))
        } else {
            None
        },
        line,
        source,
        conda,
        ..Entry::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const V6: &str = include_str!("../../../fixtures/locks/pixi/pixi.lock");
    const V7: &str = include_str!("../../../fixtures/locks/pixi-v7/pixi.lock");

    #[test]
    fn the_public_v6_lock() {
        let t = Target::linux(Some("3.14.2"), "x86_64");
        let l = read(V6, &t, "default").unwrap();
        assert!(l.warnings.is_empty(), "{:?}", l.warnings);
        let pypi: Vec<String> = l
            .entries
            .iter()
            .filter(|e| !e.conda)
            .map(|e| format!("{} {}", e.name, e.version.as_deref().unwrap_or("")))
            .collect();
        assert_eq!(
            pypi,
            ["cffi 2.0.0", "cryptography 46.0.3", "pycparser 2.23"]
        );
        let py = l.entries.iter().find(|e| e.name == "python").unwrap();
        assert_eq!(
            (py.version.as_deref(), py.build.as_deref()),
            (Some("3.14.2"), Some("h32b2ec7_100_cp314"))
        );
        assert!(V6
            .lines()
            .nth(py.line - 1)
            .unwrap()
            .contains("python-3.14.2-"));
        let cffi = l.entries.iter().find(|e| e.name == "cffi").unwrap();
        assert_eq!(V6.lines().nth(cffi.line - 1), Some("  version: 2.0.0"));
        assert_eq!(
            cffi.source,
            Src::Index(Some("https://pypi.org/simple".into()))
        );
        assert_eq!(l.entries.iter().filter(|e| e.conda).count(), 24);
        // Another platform is not locked here; another environment is not in the file.
        let arm = read(V6, &Target::linux(Some("3.14.2"), "aarch64"), "default").unwrap();
        assert!(arm.entries.is_empty() && arm.warnings[0].contains("linux-aarch64"));
        assert!(read(V6, &t, "cuda")
            .unwrap_err()
            .contains("no environment `cuda`"));
    }

    #[test]
    fn the_public_v7_lock_per_platform() {
        let t = Target::linux(Some("3.12.2"), "x86_64");
        let l = read(V7, &t, "default").unwrap();
        let names: Vec<&str> = l.entries.iter().map(|e| e.name.as_str()).collect();
        assert!(
            names.contains(&"flask") && names.contains(&"libgcc-ng"),
            "{names:?}"
        );
        assert!(
            !names.contains(&"colorama"),
            "colorama is win-64 only: {names:?}"
        );
        assert!(read("version: 8\n", &t, "default")
            .unwrap_err()
            .contains("version 8"));
        assert!(read("version: [", &t, "default")
            .unwrap_err()
            .contains("pixi.lock"));
        assert_eq!(environment_of(Some("/p/.pixi/envs/cuda")), "cuda");
        assert_eq!(environment_of(Some("/opt/conda")), "default");
    }
}
