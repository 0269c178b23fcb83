//! `uv.lock` (uv's own format, `version = 1`): every package of every platform, with the
//! markers on the dependency edges. The set a `uv sync` installs for one interpreter is found
//! as uv finds it: from the project's own package (source `editable` or `virtual` at `.`)
//! along the edges whose marker holds, with the extras an edge asks for and the default
//! dependency groups (`dev`, or `[tool.uv] default-groups`). A `virtual` project is not
//! installed itself. Forked resolutions (two versions of one name) are told apart by the
//! `version` the edge names.

use super::model::{applies, normalize, toml_error, Declared, Entry, Locked, Src, Target};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use toml::Spanned;

/// The lock versions this reader knows.
const VERSION: i64 = 1;

#[derive(Deserialize)]
struct File {
    version: Option<i64>,
    #[serde(default)]
    package: Vec<Package>,
}

#[derive(Deserialize)]
struct Package {
    name: Spanned<String>,
    version: Option<Spanned<String>>,
    source: Option<toml::Table>,
    #[serde(default)]
    dependencies: Vec<Dep>,
    #[serde(default, rename = "optional-dependencies")]
    optional: BTreeMap<String, Vec<Dep>>,
    #[serde(default, rename = "dev-dependencies")]
    dev: BTreeMap<String, Vec<Dep>>,
    metadata: Option<Metadata>,
}

#[derive(Deserialize)]
struct Dep {
    name: String,
    version: Option<String>,
    marker: Option<String>,
    #[serde(default)]
    extra: Vec<String>,
}

#[derive(Deserialize)]
struct Metadata {
    #[serde(default, rename = "requires-dist")]
    requires_dist: Vec<Recorded>,
    #[serde(default, rename = "requires-dev")]
    requires_dev: BTreeMap<String, Vec<Recorded>>,
}

#[derive(Deserialize)]
struct Recorded {
    name: String,
    specifier: Option<String>,
}

/// Which dependency groups of the root project are installed.
#[derive(Clone, Debug)]
pub enum Groups {
    /// These groups.
    Named(Vec<String>),
    /// Every group (`default-groups = "all"`).
    All,
}

impl Default for Groups {
    fn default() -> Self {
        Groups::Named(vec!["dev".to_string()])
    }
}

/// Read `text` (a `uv.lock`) for `target`, installing `groups` of the root project.
pub fn read(text: &str, target: &Target, groups: &Groups) -> Result<Locked, String> {
    let lines = super::model::Lines::new(text);
    let file: File = toml::from_str(text).map_err(|e| toml_error("uv.lock", text, &e))?;
    match file.version {
        Some(VERSION) => {}
        Some(v) => {
            return Err(format!(
                "uv.lock version {v} is not one envdoctor reads (it reads version {VERSION})"
            ))
        }
        None => return Err("not a uv.lock: it has no `version`".into()),
    }
    let pkgs = &file.package;
    let kind = |p: &Package| source_kind(p.source.as_ref());
    let roots: Vec<usize> = (0..pkgs.len())
        .filter(|&i| matches!(kind(&pkgs[i]), Kind::Root { .. }))
        .collect();
    let mut out = Locked::default();
    let seen = walk(pkgs, &roots, target, groups, &mut out.warnings);
    let mut order: Vec<usize> = seen.into_iter().collect();
    order.sort_unstable();
    for i in order {
        let p = &pkgs[i];
        let src = match kind(p) {
            Kind::Root { virtual_: true } | Kind::Virtual => continue,
            Kind::Root { virtual_: false } => Src::Editable(".".into()),
            Kind::Other(s) => s,
        };
        out.entries
            .push(Entry::pinned(&p.name, p.version.as_ref(), &lines, src));
    }
    out.recorded = recorded(pkgs, &roots);
    Ok(out)
}

/// The packages reached from `roots` along edges whose marker holds for `target`.
fn walk(
    pkgs: &[Package],
    roots: &[usize],
    target: &Target,
    groups: &Groups,
    warnings: &mut Vec<String>,
) -> HashSet<usize> {
    // Packages by normalised name, built once: a search per edge was quadratic (500 edges
    // × 500 names normalised each time).
    let mut by_name: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, p) in pkgs.iter().enumerate() {
        by_name
            .entry(normalize(p.name.get_ref()))
            .or_default()
            .push(i);
    }
    let mut seen: HashSet<usize> = roots.iter().copied().collect();
    let mut extras_seen: HashSet<(usize, &str)> = HashSet::new();
    let mut stack: Vec<&[Dep]> = Vec::new();
    for &r in roots {
        stack.push(&pkgs[r].dependencies);
        for (g, deps) in &pkgs[r].dev {
            let on = match groups {
                Groups::All => true,
                Groups::Named(n) => n.iter().any(|x| normalize(x) == normalize(g)),
            };
            if on {
                stack.push(deps);
            }
        }
    }
    while let Some(edges) = stack.pop() {
        for d in edges {
            let holds = target.holds(d.marker.as_deref().unwrap_or(""));
            if !applies(holds, warnings, String::new) {
                continue;
            }
            let Some(j) = find(pkgs, &by_name, d) else {
                warnings.push(format!("a dependency on `{}` that the lock lacks", d.name));
                continue;
            };
            for x in &d.extra {
                if let Some(more) = pkgs[j].optional.get(x) {
                    if extras_seen.insert((j, x.as_str())) {
                        stack.push(more);
                    }
                }
            }
            if seen.insert(j) {
                stack.push(&pkgs[j].dependencies);
            }
        }
    }
    seen
}

/// The root project's recorded requirements (`uv lock --check` compares them).
fn recorded(pkgs: &[Package], roots: &[usize]) -> Option<Vec<Declared>> {
    let root = roots.first().map(|&r| &pkgs[r])?;
    let m = root.metadata.as_ref()?;
    let mut v: Vec<Declared> = m
        .requires_dist
        .iter()
        .map(|r| Declared::new("", &r.name, r.specifier.as_deref().unwrap_or("")))
        .collect();
    for (g, reqs) in &m.requires_dev {
        let group = format!("group:{}", normalize(g));
        v.extend(
            reqs.iter()
                .map(|r| Declared::new(&group, &r.name, r.specifier.as_deref().unwrap_or(""))),
        );
    }
    v.sort();
    v.dedup();
    Some(v)
}

/// The package an edge names: by name, and by version when the lock forked.
fn find(pkgs: &[Package], by_name: &HashMap<String, Vec<usize>>, d: &Dep) -> Option<usize> {
    by_name
        .get(&normalize(&d.name))?
        .iter()
        .copied()
        .find(|&i| {
            d.version
                .as_ref()
                .is_none_or(|v| pkgs[i].version.as_ref().is_some_and(|pv| pv.get_ref() == v))
        })
}

enum Kind {
    /// The project itself (`editable = "."` or `virtual = "."`).
    Root {
        virtual_: bool,
    },
    /// Another virtual workspace member (not installed).
    Virtual,
    Other(Src),
}

fn source_kind(src: Option<&toml::Table>) -> Kind {
    let Some(t) = src else {
        return Kind::Other(Src::Unsaid);
    };
    let s = |k: &str| t.get(k).and_then(|v| v.as_str()).map(str::to_string);
    if let Some(p) = s("editable") {
        return if p == "." {
            Kind::Root { virtual_: false }
        } else {
            Kind::Other(Src::Editable(p))
        };
    }
    if let Some(p) = s("virtual") {
        return if p == "." {
            Kind::Root { virtual_: true }
        } else {
            Kind::Virtual
        };
    }
    if let Some(u) = s("registry") {
        return Kind::Other(Src::Index(Some(u)));
    }
    if let Some(u) = s("git") {
        return Kind::Other(Src::Git(u));
    }
    if let Some(u) = s("url") {
        return Kind::Other(Src::Url(u));
    }
    if let Some(p) = s("path").or_else(|| s("directory")) {
        return Kind::Other(Src::Path(p));
    }
    Kind::Other(Src::Unsaid)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = include_str!("../../../fixtures/locks/uv/uv.lock");

    #[test]
    fn the_real_lock_narrows_to_the_interpreter() {
        let l = read(
            FIXTURE,
            &Target::linux(Some("3.11.7"), "x86_64"),
            &Groups::default(),
        )
        .unwrap();
        assert!(l.warnings.is_empty(), "{:?}", l.warnings);
        assert_eq!(
            l.pins("?"),
            [
                "demo 0.1.0",
                "iniconfig 2.3.1",
                "packaging 26.4",
                "six 1.17.0",
                "urllib3 2.8.0"
            ]
        );
        let six = l.entries.iter().find(|e| e.name == "six").unwrap();
        assert_eq!(
            FIXTURE.lines().nth(six.line - 1),
            Some("version = \"1.17.0\"")
        );
        assert_eq!(
            six.source,
            Src::Index(Some("https://pypi.org/simple".into()))
        );
        assert_eq!(l.entries[0].source, Src::Editable(".".into()));
        let old = read(
            FIXTURE,
            &Target::linux(Some("3.9.18"), "x86_64"),
            &Groups::Named(vec![]),
        )
        .unwrap();
        assert_eq!(
            old.pins("?"),
            [
                "demo 0.1.0",
                "packaging 26.3",
                "six 1.17.0",
                "tomli 2.5.0",
                "urllib3 2.6.3"
            ]
        );
        let rec = l.recorded.unwrap();
        assert!(
            rec.contains(&Declared::new("", "urllib3", ">=2,<3")),
            "{rec:?}"
        );
        assert!(
            rec.contains(&Declared::new("group:dev", "iniconfig", "")),
            "{rec:?}"
        );
    }

    #[test]
    fn bad_locks_say_why() {
        let t = Target::linux(Some("3.11"), "x86_64");
        let e = read("version = 2\n", &t, &Groups::default()).unwrap_err();
        assert!(e.contains("version 2"), "{e}");
        let e = read("[[package]]\nname = 5\n", &t, &Groups::default()).unwrap_err();
        assert!(e.contains("line 2"), "{e}");
        assert!(read("", &t, &Groups::default()).is_err());
    }
}
