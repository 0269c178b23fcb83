//! What every lock reader produces: the packages a lock pins for one interpreter ([`Entry`]),
//! where each comes from ([`Src`]), and the interpreter they are chosen for ([`Target`]:
//! markers evaluated against its Python version and platform, the conda platform).

use pep508_rs::{MarkerEnvironment, MarkerTree};
use std::str::FromStr;

/// Where a locked package comes from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Src {
    /// Not said (a plain `name==version` line; a conda package).
    #[default]
    Unsaid,
    /// A package index (its URL when the lock names one).
    Index(Option<String>),
    /// A direct URL (an archive or a wheel).
    Url(String),
    /// A local file or directory, not editable.
    Path(String),
    /// A VCS checkout (`git+https://…`).
    Git(String),
    /// An editable install of a local directory.
    Editable(String),
}

impl Src {
    /// A VCS checkout (`URL@REV` when the lock names the revision) or a local directory
    /// (editable or not), as pdm and Pipfile locks spell them; `None` when it is neither.
    pub fn checkout(
        git: Option<&String>,
        rev: Option<&String>,
        path: Option<&String>,
        editable: bool,
    ) -> Option<Src> {
        if let Some(g) = git {
            return Some(Src::Git(match rev {
                Some(r) => format!("{g}@{r}"),
                None => g.clone(),
            }));
        }
        let path = path?.clone();
        Some(if editable {
            Src::Editable(path)
        } else {
            Src::Path(path)
        })
    }

    /// For a person: `index https://…`, `url …`, `editable .`.
    pub fn describe(&self) -> Option<String> {
        Some(match self {
            Src::Unsaid => return None,
            Src::Index(None) => "index".to_string(),
            Src::Index(Some(u)) => format!("index {u}"),
            Src::Url(u) => format!("url {u}"),
            Src::Path(p) => format!("path {p}"),
            Src::Git(u) => format!("git {u}"),
            Src::Editable(p) => format!("editable {p}"),
        })
    }
}

/// One package a lock pins for the target interpreter.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Entry {
    /// PEP 503 normalised name (a conda package's name as conda writes it).
    pub name: String,
    /// The exact version pinned, when there is one.
    pub version: Option<String>,
    /// The requirement, when no exact version is pinned (`>=1.2`, `1.26.*`).
    pub spec: Option<String>,
    /// 1-based line of the pin in the file.
    pub line: usize,
    /// The file the pin is in when it is not the lock itself (a `-r` include).
    pub file: Option<String>,
    /// Where it comes from.
    pub source: Src,
    /// A conda package (compared with `conda-meta/`, not with dist-info).
    pub conda: bool,
    /// A conda package's build string (`py311h64a7726_0`), when the lock pins one.
    pub build: Option<String>,
    /// Only a constraint (`-c`): it bounds the version if installed, it does not ask for it.
    pub constraint: bool,
}

impl Entry {
    /// The pin of one package table of a TOML lock (pdm, pylock, uv): its name normalised, its
    /// version, on the line of the version (of the name when there is none).
    pub fn pinned(
        name: &toml::Spanned<String>,
        version: Option<&toml::Spanned<String>>,
        lines: &Lines,
        source: Src,
    ) -> Entry {
        let at = version.map_or(name.span().start, |v| v.span().start);
        Entry {
            name: normalize(name.get_ref()),
            version: version.map(|v| v.get_ref().clone()),
            line: lines.of(at),
            source,
            ..Entry::default()
        }
    }
}

/// A requirement a project declares (or a lock records that it declared): its group (`""` for
/// the project's own dependencies), its normalised name, and its version specifier in a
/// canonical spelling (`""` when it has none).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Declared {
    /// `""`, an extra (`extra:socks`) or a dependency group (`group:dev`).
    pub group: String,
    /// Normalised name.
    pub name: String,
    /// The specifier, canonical (`<3,>=2`), or `""`.
    pub spec: String,
}

impl Declared {
    /// A requirement with its specifier put in a canonical order (an unparsable one is kept
    /// as written).
    pub fn new(group: &str, name: &str, spec: &str) -> Declared {
        let spec = match pep440_rs::VersionSpecifiers::from_str(spec.trim()) {
            Ok(s) => {
                let mut parts: Vec<String> = s.iter().map(|v| v.to_string()).collect();
                parts.sort();
                parts.join(",")
            }
            Err(_) => spec.trim().to_string(),
        };
        Declared {
            group: group.to_string(),
            name: normalize(name),
            spec,
        }
    }

    /// `dev: iniconfig>=2`.
    pub fn describe(&self) -> String {
        let g = if self.group.is_empty() {
            String::new()
        } else {
            format!("{}: ", self.group)
        };
        format!("{g}{}{}", self.name, self.spec)
    }
}

/// A lock read for one interpreter.
#[derive(Clone, Debug, Default)]
pub struct Locked {
    /// The packages it pins for the target.
    pub entries: Vec<Entry>,
    /// For `uv.lock`: the root project's recorded requirements (`[package.metadata]
    /// requires-dist` and `requires-dev`) as [`Declared`], which `uv lock --check` compares
    /// with `pyproject.toml`; `None` for formats that record none.
    pub recorded: Option<Vec<Declared>>,
    /// Names the lock records for a selection its sync command leaves out (Pipfile.lock's
    /// `develop` for `pipenv sync`): installed, they are neither drift nor unlocked, as the
    /// tool's own clean-up (`pipenv clean`) keeps them.
    pub also_locked: Vec<String>,
    /// Problems met that did not stop the reading (an unparsable marker), with their line.
    pub warnings: Vec<String>,
}

impl Locked {
    /// Add the pin of one package table of a TOML lock (pdm, pylock) when its marker `holds`;
    /// a marker that cannot be read leaves the package out with a warning on the name's line
    /// (see [`applies`]).
    pub fn pin_where(
        &mut self,
        holds: Result<bool, String>,
        lines: &Lines,
        name: &toml::Spanned<String>,
        version: Option<&toml::Spanned<String>>,
        source: impl FnOnce() -> Src,
    ) {
        if applies(holds, &mut self.warnings, || {
            format!("line {}: ", lines.of(name.span().start))
        }) {
            self.entries
                .push(Entry::pinned(name, version, lines, source()));
        }
    }

    /// `name version` of each pin (`absent` for no version), in order: what the readers'
    /// tests compare.
    #[cfg(test)]
    pub fn pins(&self, absent: &str) -> Vec<String> {
        self.entries
            .iter()
            .map(|e| format!("{} {}", e.name, e.version.as_deref().unwrap_or(absent)))
            .collect()
    }
}

/// The interpreter a lock is read for.
#[derive(Clone, Debug)]
pub struct Target {
    /// Its marker environment; `None` when its version is unknown (then every package with a
    /// marker is kept: the lock cannot be narrowed).
    pub markers: Option<MarkerEnvironment>,
    /// The conda platform (`linux-64`, `linux-aarch64`).
    pub conda_platform: String,
    /// Verdicts already reached, by marker and extras: a lock repeats a few markers hundreds
    /// of times, and building a marker tree is the costly part of reading one.
    verdicts: std::cell::RefCell<std::collections::HashMap<String, Result<bool, String>>>,
}

impl Target {
    /// A target for CPython `version` on Linux `machine` (`x86_64`, `aarch64`).
    pub fn linux(version: Option<&str>, machine: &str) -> Target {
        let markers =
            version.and_then(|v| crate::probe::python::requires::marker_environment(v, machine));
        let conda_platform = match machine {
            "aarch64" | "arm64" => "linux-aarch64",
            "ppc64le" => "linux-ppc64le",
            _ => "linux-64",
        }
        .to_string();
        Target {
            markers,
            conda_platform,
            verdicts: Default::default(),
        }
    }

    /// Whether a PEP 508 marker holds here (an empty one always does). `Err` when it cannot be
    /// parsed.
    pub fn holds(&self, marker: &str) -> Result<bool, String> {
        self.holds_with(marker, &[])
    }

    /// [`Target::holds`] with these extras active.
    pub fn holds_with(&self, marker: &str, extras: &[&str]) -> Result<bool, String> {
        let marker = marker.trim();
        if marker.is_empty() {
            return Ok(true);
        }
        let key = format!("{marker}\0{}", extras.join(","));
        if let Some(v) = self.verdicts.borrow().get(&key) {
            return v.clone();
        }
        let v = self.evaluate(marker, extras);
        let mut cache = self.verdicts.borrow_mut();
        if cache.len() < 4096 {
            cache.insert(key, v.clone());
        }
        v
    }

    fn evaluate(&self, marker: &str, extras: &[&str]) -> Result<bool, String> {
        // Through the guarded PEP 508 parser: pep508_rs can panic or overflow its stack on
        // hostile input.
        let tree: MarkerTree = match crate::probe::python::requires::parse(&format!("x ; {marker}"))
        {
            Ok(Some(r)) => r.marker,
            Ok(None) => return Err(format!("marker `{marker}` is not PEP 508")),
            Err(e) => return Err(format!("marker `{marker}`: {e}")),
        };
        let Some(env) = &self.markers else {
            return Ok(true);
        };
        let extras: Vec<pep508_rs::ExtraName> = extras
            .iter()
            .filter_map(|e| pep508_rs::ExtraName::from_str(e).ok())
            .collect();
        Ok(tree.evaluate(env, &extras))
    }
}

/// A marker's verdict as the readers keep it: whether the package applies. A marker that cannot
/// be read does not hold, and is a warning: `prefix()` (where in the lock) followed by why.
pub fn applies(
    holds: Result<bool, String>,
    warnings: &mut Vec<String>,
    prefix: impl FnOnce() -> String,
) -> bool {
    match holds {
        Ok(h) => h,
        Err(e) => {
            warnings.push(format!("{}{e}", prefix()));
            false
        }
    }
}

/// A distribution name normalised as PEP 503 says (`Foo_Bar` → `foo-bar`).
pub fn normalize(name: &str) -> String {
    crate::probe::python::dist_info::normalize_name(name.trim())
}

/// The 1-based line of byte `offset` in `text`.
pub fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Line numbers of one text, the newlines found once (a lock asks for hundreds).
pub struct Lines(Vec<usize>);

impl Lines {
    /// Index `text`'s newlines.
    pub fn new(text: &str) -> Lines {
        Lines(memchr::memchr_iter(b'\n', text.as_bytes()).collect())
    }

    /// The 1-based line of byte `offset` (as [`line_of`]).
    pub fn of(&self, offset: usize) -> usize {
        self.0.partition_point(|&nl| nl < offset) + 1
    }
}

/// A TOML parse error naming the format and the line.
pub fn toml_error(what: &str, text: &str, e: &toml::de::Error) -> String {
    let at = e
        .span()
        .map(|s| format!(" (line {})", line_of(text, s.start)))
        .unwrap_or_default();
    format!("not a valid {what}{at}: {}", e.message().trim_end())
}

/// Refuse input larger than a lock could plausibly be (a hostile file must not cost the probe
/// its deadline).
pub const MAX_LOCK_BYTES: u64 = 64 * 1024 * 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_hold_for_the_target_only() {
        let t = Target::linux(Some("3.11.7"), "x86_64");
        assert_eq!(t.holds("python_full_version >= '3.10'"), Ok(true));
        assert_eq!(t.holds("python_full_version < '3.10'"), Ok(false));
        assert_eq!(t.holds("sys_platform == 'win32'"), Ok(false));
        assert_eq!(t.holds("platform_machine == 'aarch64'"), Ok(false));
        assert_eq!(t.holds("extra == 'socks'"), Ok(false));
        assert_eq!(t.holds_with("extra == 'socks'", &["socks"]), Ok(true));
        assert_eq!(t.holds(""), Ok(true));
        assert!(t.holds("python_version >>> '3'").is_err());
        let unknown = Target::linux(None, "aarch64");
        assert_eq!(unknown.holds("python_version < '3'"), Ok(true));
        assert_eq!(unknown.conda_platform, "linux-aarch64");
        assert_eq!(line_of("a\nb\nc", 2), 2);
        let text = "a\nbc\n\nd";
        let lines = Lines::new(text);
        for at in 0..=text.len() + 3 {
            assert_eq!(lines.of(at), line_of(text, at), "{at}");
        }
        assert_eq!(normalize("Foo_Bar.baz"), "foo-bar-baz");
    }
}
