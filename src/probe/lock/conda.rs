//! conda's `environment.yml` and conda-lock's `conda-lock.yml`, read as their tools define them.
//!
//! - `environment.yml` (what `conda env create/update --file` reads): `dependencies` are conda
//!   match specs (`numpy`, `python=3.11`, `numpy>=1.26,<2`, `pytorch::pytorch 2.6.*`,
//!   `numpy=1.26.4=py311h64a7726_0`, `numpy[version='>=1.26']`), and a `pip:` list that conda
//!   hands to `pip install -r` from a file beside the environment file (so it is read here as a
//!   requirements file in that directory, includes and all). It is not a lock: each conda entry
//!   is a requirement the installed record must meet, not a pin.
//! - `conda-lock.yml` (`version: 1`, or the `version: 2` model conda-lock also reads): one
//!   `package` entry per package, platform and category, `manager: conda` or `pip`; what
//!   `conda-lock install` installs by default is the `main` and `dev` categories of the
//!   target's platform.
//!
//! Conda entries are compared with `conda-meta/` ([`super::conda_meta`]), pip ones with
//! dist-info. YAML is parsed with serde-saphyr under a node/depth budget.

use super::model::{normalize, Entry, Locked, Src, Target};
use serde::de::{self, DeserializeOwned, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_saphyr::Spanned;
use std::fmt;

/// Parse YAML under a budget large enough for a real lock and small enough for a hostile one.
pub fn yaml<T: DeserializeOwned>(what: &str, text: &str) -> Result<T, String> {
    let mut options = serde_saphyr::Options::default();
    let mut budget = options.budget.clone().unwrap_or_default();
    budget.max_nodes = 4_000_000;
    budget.max_depth = 64;
    options.budget = Some(budget);
    serde_saphyr::from_str_with_options(text, options).map_err(|e| {
        let at = e
            .location()
            .map(|l| format!(" (line {})", l.line()))
            .unwrap_or_default();
        let msg = e.to_string();
        let first = msg.lines().next().unwrap_or("").trim();
        format!("not a valid {what}{at}: {first}")
    })
}

/// A conda match spec, the parts this compares.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MatchSpec {
    /// The package name.
    pub name: String,
    /// `conda-forge` in `conda-forge::numpy`.
    pub channel: Option<String>,
    /// A conda version spec (`1.26.*`, `>=1.26,<2`, `==1.26.4`); `None` for any version.
    pub version: Option<String>,
    /// A build string or glob (`py311*`).
    pub build: Option<String>,
}

/// Parse one conda match spec as conda's `MatchSpec` does for the common forms.
pub fn match_spec(spec: &str) -> Result<MatchSpec, String> {
    let s = spec.split('#').next().unwrap_or("").trim();
    let (channel, s) = match s.rsplit_once("::") {
        Some((c, rest)) => (Some(c.to_string()), rest.trim()),
        None => (None, s),
    };
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || "_.-".contains(c)))
        .unwrap_or(s.len());
    let (name, mut rest) = (s[..end].to_string(), s[end..].trim());
    if name.is_empty() {
        return Err(format!("`{spec}` is not a conda match spec"));
    }
    let mut out = MatchSpec {
        name: name.to_lowercase(),
        channel,
        ..MatchSpec::default()
    };
    if let Some(inner) = rest.strip_prefix('[') {
        let inner = inner
            .strip_suffix(']')
            .ok_or_else(|| format!("`{spec}`: `[` without `]`"))?;
        for kv in inner.split(',') {
            let Some((k, v)) = kv.split_once('=') else {
                continue;
            };
            let v = v.trim().trim_matches(|c| c == '\'' || c == '"').to_string();
            match k.trim() {
                "version" => out.version = Some(v),
                "build" => out.build = Some(v),
                _ => {}
            }
        }
        return Ok(out);
    }
    if rest.is_empty() {
        return Ok(out);
    }
    if let Some(r) = rest.strip_prefix('=').filter(|r| !r.starts_with('=')) {
        // `name=1.26` is `1.26*`; `name=1.26.4=build` pins the version and the build.
        match r.split_once('=') {
            Some((v, b)) => {
                out.version = Some(v.trim().to_string());
                out.build = Some(b.trim().to_string());
            }
            None if r.ends_with('*') => out.version = Some(r.trim().to_string()),
            None => out.version = Some(format!("{}*", r.trim())),
        }
        return Ok(out);
    }
    if !rest.starts_with(['<', '>', '=', '!', '~']) {
        // `name 1.26.*` or `name 1.26.4 py311_0`.
        let mut parts = rest.split_whitespace();
        out.version = parts.next().map(str::to_string);
        out.build = parts.next().map(str::to_string);
        return Ok(out);
    }
    if let Some((v, b)) = rest.split_once(char::is_whitespace) {
        out.build = Some(b.trim().to_string());
        rest = v;
    }
    let rest = match rest.strip_prefix("==").map(|r| r.split_once('=')) {
        Some(Some((v, b))) => {
            out.build = Some(b.to_string());
            format!("=={v}")
        }
        _ => rest.to_string(),
    };
    out.version = Some(rest.replace(' ', ""));
    Ok(out)
}

/// Whether conda `version` meets the conda version spec `spec` (`|` any of, `,` all of;
/// `1.2*`/`1.2.*` prefixes; `==`, `!=`, `>=`, `<=`, `>`, `<`, `~=`; a bare version is exact).
/// `None` when it cannot be told (a version that is not PEP 440 against an ordering).
pub fn version_matches(spec: &str, version: &str) -> Option<bool> {
    let mut any = false;
    for alt in spec.split('|') {
        let mut all = true;
        for atom in alt.split(',') {
            all &= atom_matches(atom.trim(), version)?;
        }
        any |= all;
    }
    Some(any)
}

fn atom_matches(atom: &str, version: &str) -> Option<bool> {
    use pep440_rs::Version;
    use std::str::FromStr;
    if atom.is_empty() || atom == "*" {
        return Some(true);
    }
    let ops = [">=", "<=", "==", "!=", "~=", ">", "<", "="];
    let (op, value) = ops
        .iter()
        .find_map(|o| atom.strip_prefix(o).map(|v| (*o, v.trim())))
        .unwrap_or(("", atom));
    let star = value.ends_with('*');
    let base = value.trim_end_matches('*').trim_end_matches('.');
    let prefix = || {
        let have: Vec<&str> = version.split(['.', '+']).collect();
        let want: Vec<&str> = base.split('.').collect();
        have.len() >= want.len() && have[..want.len()] == want[..]
    };
    let parsed = || {
        Some((
            Version::from_str(version).ok()?,
            Version::from_str(base).ok()?,
        ))
    };
    let equal = || match parsed() {
        Some((a, b)) => a == b,
        None => version == base,
    };
    Some(match op {
        "" | "==" if star => prefix(),
        "=" => prefix(),
        "" | "==" => equal(),
        "!=" if star => !prefix(),
        "!=" => !equal(),
        "~=" => {
            let (have, want) = parsed()?;
            have >= want && prefix_of_compatible(base, version)
        }
        _ => {
            let (have, want) = parsed()?;
            match op {
                ">=" => have >= want,
                "<=" => have <= want,
                ">" => have > want,
                _ => have < want,
            }
        }
    })
}

/// `~=1.4.5` is `>=1.4.5, 1.4.*`.
fn prefix_of_compatible(base: &str, version: &str) -> bool {
    let want: Vec<&str> = base.split('.').collect();
    let keep = want.len().saturating_sub(1).max(1);
    let have: Vec<&str> = version.split('.').collect();
    have.len() >= keep && have[..keep] == want[..keep]
}

/// One `dependencies` item of an environment file.
enum Dep {
    /// A conda match spec.
    Spec(String),
    /// The `pip:` list (an item that is not a string is left out, as a line pip cannot read).
    Pip(Vec<Spanned<MaybeStr>>),
    /// Anything else (ignored, as conda does for keys it does not know).
    Other,
}

impl<'de> Deserialize<'de> for Dep {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Dep, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Dep;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a match spec or a `pip:` list")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Dep, E> {
                Ok(Dep::Spec(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Dep, E> {
                Ok(Dep::Spec(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Dep, E> {
                Ok(Dep::Spec(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Dep, E> {
                Ok(Dep::Other)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Dep, E> {
                Ok(Dep::Other)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Dep, E> {
                Ok(Dep::Other)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Dep, A::Error> {
                while a.next_element::<de::IgnoredAny>()?.is_some() {}
                Ok(Dep::Other)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Dep, A::Error> {
                let mut out = Dep::Other;
                while let Some(k) = m.next_key::<String>()? {
                    if k == "pip" {
                        out = Dep::Pip(
                            m.next_value::<Option<Vec<Spanned<MaybeStr>>>>()?
                                .unwrap_or_default(),
                        );
                    } else {
                        m.next_value::<de::IgnoredAny>()?;
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_any(V)
    }
}

/// A string, or `None` for a value of another shape.
struct MaybeStr(Option<String>);

impl<'de> Deserialize<'de> for MaybeStr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<MaybeStr, D::Error> {
        Ok(MaybeStr(match Dep::deserialize(d)? {
            Dep::Spec(s) => Some(s),
            _ => None,
        }))
    }
}

#[derive(Deserialize)]
struct EnvFile {
    #[serde(default)]
    dependencies: Option<Vec<Spanned<Dep>>>,
}

/// Read `text` (the environment file `path`) for `target`: conda entries (`conda: true`, the
/// match spec's version as `spec`, its build and channel) and the `pip:` section's entries,
/// read as a requirements file beside `path` (`include` reads its `-r`/`-c` files).
pub fn read_environment(
    text: &str,
    path: &str,
    target: &Target,
    include: &mut super::requirements::Include,
) -> Result<Locked, String> {
    let file: EnvFile = yaml("conda environment file", text)?;
    let mut out = Locked::default();
    let mut pip_text = String::new();
    let mut pip_lines = Vec::new();
    for dep in file.dependencies.unwrap_or_default() {
        let line = dep.referenced.line() as usize;
        match dep.value {
            Dep::Spec(s) => match match_spec(&s) {
                Ok(m) => out.entries.push(Entry {
                    name: m.name,
                    spec: m.version,
                    build: m.build,
                    line,
                    source: m.channel.map_or(Src::Unsaid, |c| Src::Index(Some(c))),
                    conda: true,
                    ..Entry::default()
                }),
                Err(e) => out.warnings.push(format!("line {line}: {e}")),
            },
            Dep::Pip(items) => {
                for item in items {
                    let line = item.referenced.line();
                    let Some(value) = item.value.0 else {
                        continue;
                    };
                    // One requirements line per item: a continuation could not join two.
                    pip_text.push_str(value.replace(['\n', '\r'], " ").trim_end_matches('\\'));
                    pip_text.push('\n');
                    pip_lines.push(line as usize);
                }
            }
            Dep::Other => {}
        }
    }
    if !pip_lines.is_empty() {
        let pip = super::requirements::read(&pip_text, path, target, include);
        out.warnings.extend(pip.warnings);
        for mut e in pip.entries {
            if e.file.as_deref().is_none_or(|f| f == path) {
                e.file = None;
                e.line = pip_lines
                    .get(e.line.saturating_sub(1))
                    .copied()
                    .unwrap_or(0);
            }
            out.entries.push(e);
        }
    }
    Ok(out)
}

#[derive(Deserialize)]
struct CondaLockFile {
    version: Option<serde_saphyr::Spanned<i64>>,
    #[serde(default)]
    package: Vec<Spanned<CondaLockPackage>>,
}

#[derive(Deserialize)]
struct CondaLockPackage {
    name: String,
    version: Spanned<String>,
    manager: String,
    platform: String,
    #[serde(default)]
    url: String,
    category: Option<String>,
    #[serde(default)]
    categories: Vec<String>,
}

/// The categories `conda-lock install` installs by default (`--dev-dependencies` is on).
const INSTALLED_CATEGORIES: &[&str] = &["main", "dev"];

/// Read `text` (a `conda-lock.yml`) for `target`'s conda platform.
pub fn read_conda_lock(text: &str, target: &Target) -> Result<Locked, String> {
    let file: CondaLockFile = yaml("conda-lock.yml", text)?;
    match file.version.as_ref().map(|v| v.value) {
        Some(1 | 2) => {}
        Some(v) => {
            return Err(format!(
                "version {v} is not one envdoctor reads (it reads conda-lock's 1 and 2)"
            ))
        }
        None => return Err("not a conda-lock file: it has no `version`".into()),
    }
    let mut out = Locked::default();
    let mut seen = std::collections::HashSet::new();
    for p in &file.package {
        let p = &p.value;
        let cats: Vec<&str> = p
            .category
            .iter()
            .map(String::as_str)
            .chain(p.categories.iter().map(String::as_str))
            .collect();
        let wanted = cats.is_empty() || cats.iter().any(|c| INSTALLED_CATEGORIES.contains(c));
        if p.platform != target.conda_platform || !wanted {
            continue;
        }
        let conda = match p.manager.as_str() {
            "conda" => true,
            "pip" => false,
            other => {
                out.warnings.push(format!(
                    "line {}: manager `{other}` is not conda or pip",
                    p.version.referenced.line()
                ));
                continue;
            }
        };
        let name = if conda {
            p.name.to_lowercase()
        } else {
            normalize(&p.name)
        };
        if !seen.insert((name.clone(), conda)) {
            continue;
        }
        let (build, source) = if conda {
            let (_, _, build) = conda_file_parts(&p.url).unwrap_or_default();
            (
                (!build.is_empty()).then_some(build),
                Src::Index(channel_of(&p.url)),
            )
        } else {
            (None, pip_source(&p.url, None))
        };
        out.entries.push(Entry {
            name,
            version: Some(p.version.value.clone()),
            build,
            line: p.version.referenced.line() as usize,
            source,
            conda,
            ..Entry::default()
        });
    }
    Ok(out)
}

/// Where a PyPI package of a conda-lock or pixi lock comes from: a wheel URL is an index's
/// file (`index` names it when the lock does), a `git+` URL a checkout, anything else a path.
pub fn pip_source(url: &str, index: Option<&str>) -> Src {
    if url.starts_with("git+") {
        Src::Git(url.to_string())
    } else if url.starts_with("http://") || url.starts_with("https://") {
        Src::Index(index.map(str::to_string))
    } else if url.is_empty() {
        Src::Unsaid
    } else {
        Src::Path(url.trim_start_matches("file://").to_string())
    }
}

/// `(name, version, build)` of a conda package file URL
/// (`…/linux-64/numpy-1.26.4-py311h64a7726_0.conda`).
pub fn conda_file_parts(url: &str) -> Option<(String, String, String)> {
    let file = url.rsplit('/').next()?;
    let stem = file
        .strip_suffix(".conda")
        .or_else(|| file.strip_suffix(".tar.bz2"))?;
    let mut it = stem.rsplitn(3, '-');
    let build = it.next()?.to_string();
    let version = it.next()?.to_string();
    let name = it.next()?.to_string();
    Some((name, version, build))
}

/// The channel of a conda package URL: the URL without `/<subdir>/<file>`.
pub fn channel_of(url: &str) -> Option<String> {
    let (dir, _) = url.rsplit_once('/')?;
    let (channel, _) = dir.rsplit_once('/')?;
    (!channel.is_empty()).then(|| channel.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOCK: &str = include_str!("../../../fixtures/locks/conda-lock/conda-lock.yml");
    const ENV: &str = include_str!("../../../fixtures/locks/conda/environment.yml");

    fn no_include(_: &str, _: &str) -> Result<(String, String), String> {
        Err("no includes here".into())
    }

    #[test]
    fn match_specs_as_conda_reads_them() {
        let m = |s: &str| match_spec(s).unwrap();
        assert_eq!(m("numpy").version, None);
        assert_eq!(m("python=3.11").version.as_deref(), Some("3.11*"));
        assert_eq!(m("numpy>=1.26,<2").version.as_deref(), Some(">=1.26,<2"));
        let p = m("pytorch::pytorch 2.6.* *cuda*");
        assert_eq!(
            (
                p.channel.as_deref(),
                p.version.as_deref(),
                p.build.as_deref()
            ),
            (Some("pytorch"), Some("2.6.*"), Some("*cuda*"))
        );
        let b = m("numpy=1.26.4=py311h64a7726_0");
        assert_eq!(
            (b.version.as_deref(), b.build.as_deref()),
            (Some("1.26.4"), Some("py311h64a7726_0"))
        );
        assert_eq!(m("numpy==1.26.4").version.as_deref(), Some("==1.26.4"));
        assert_eq!(
            m("numpy[version='>=1.26']").version.as_deref(),
            Some(">=1.26")
        );
        assert!(match_spec(">=1").is_err());
        let v = |s: &str, v: &str| version_matches(s, v).unwrap();
        assert!(v("3.11*", "3.11.7") && !v("3.11*", "3.12.0") && !v("3.1*", "3.11.0"));
        assert!(v(">=1.26,<2", "1.26.4") && !v(">=1.26,<2", "2.0.1"));
        assert!(v("1.26.4", "1.26.4") && !v("1.26.4", "1.26.3"));
        assert!(v("1.25|1.26.*", "1.26.4") && v("~=1.26.0", "1.26.4") && !v("~=1.26.0", "1.27"));
        assert!(v("==2024a", "2024a") && version_matches(">=1.1.1w", "1.1.1v").is_none());
    }

    #[test]
    fn the_public_conda_lock_for_each_platform() {
        let x86 = read_conda_lock(LOCK, &Target::linux(Some("3.12.0"), "x86_64")).unwrap();
        let arm = read_conda_lock(LOCK, &Target::linux(Some("3.12.0"), "aarch64")).unwrap();
        let has = |l: &Locked, n: &str| l.entries.iter().any(|e| e.name == n);
        assert!(has(&x86, "ld_impl_linux-64") && !has(&x86, "ld_impl_linux-aarch64"));
        assert!(has(&arm, "ld_impl_linux-aarch64") && !has(&arm, "_libgcc_mutex"));
        let py = x86.entries.iter().find(|e| e.name == "python").unwrap();
        assert!(py.conda);
        assert_eq!(py.version.as_deref(), Some("3.12.0"));
        assert_eq!(py.build.as_deref(), Some("hab00c5b_0_cpython"));
        assert_eq!(
            py.source,
            Src::Index(Some("https://conda.anaconda.org/conda-forge".into()))
        );
        assert_eq!(LOCK.lines().nth(py.line - 1), Some("  version: 3.12.0"));
        let req = x86.entries.iter().find(|e| e.name == "requests").unwrap();
        assert!(!req.conda);
        assert_eq!(req.version.as_deref(), Some("2.31.0"));
        assert_eq!(LOCK.lines().nth(req.line - 2), Some("- name: requests"));
        let e = read_conda_lock("version: 3\npackage: []\n", &Target::linux(None, "x86_64"));
        assert!(e.unwrap_err().contains("version 3"));
    }

    #[test]
    fn an_environment_file_conda_and_pip() {
        let t = Target::linux(Some("3.11.7"), "x86_64");
        let l = read_environment(ENV, "/p/environment.yml", &t, &mut no_include).unwrap();
        let got: Vec<String> = l
            .entries
            .iter()
            .map(|e| {
                format!(
                    "{}{} {} {}",
                    if e.conda { "conda:" } else { "pip:" },
                    e.name,
                    e.version.as_deref().or(e.spec.as_deref()).unwrap_or("-"),
                    ENV.lines().nth(e.line - 1).unwrap_or("?").trim()
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                "conda:python 3.11* - python=3.11",
                "conda:numpy >=1.26,<2 - numpy>=1.26,<2",
                "conda:pytorch 2.6.* - pytorch::pytorch 2.6.*",
                "conda:pip - - pip",
                "pip:six 1.17.0 - six==1.17.0",
                "pip:urllib3 >=2 - urllib3>=2",
            ]
        );
        assert!(l.warnings.is_empty(), "{:?}", l.warnings);
        let bad = read_environment("dependencies: {a: [", "/p/e.yml", &t, &mut no_include);
        assert!(bad
            .unwrap_err()
            .starts_with("not a valid conda environment file"));
    }
}
