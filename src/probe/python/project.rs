//! The project's own environments: `.venv`, `venv`, `env` (a directory with `pyvenv.cfg`), the
//! Poetry and Pipenv virtualenvs made for it, and the conda env its `environment.yml` names.
//!
//! - Poetry: `<virtualenvs>/<name>-<8 chars>-pyX.Y`, where `<virtualenvs>` is
//!   `$POETRY_VIRTUALENVS_PATH`, else `$POETRY_CACHE_DIR/virtualenvs`, else
//!   `${XDG_CACHE_HOME:-~/.cache}/pypoetry/virtualenvs`, and `<name>` is the `[project]` (else
//!   `[tool.poetry]`) name of `pyproject.toml` normalised as Poetry does (PEP 503, then
//!   `` $`!*@"\`` and whitespace to `_`, lower case, at most 42 characters). The 8 characters
//!   are a hash of the project path that is not recomputed: every env of that name matches.
//! - Pipenv: `<virtualenvs>/<dirname>-<8 chars>`, `<virtualenvs>` being `$WORKON_HOME`, else
//!   `${XDG_DATA_HOME:-~/.local/share}/virtualenvs`, `<dirname>` the project directory's name
//!   with `` &$`!*@"()[]\`` and whitespace turned to `_` (at most 42 characters).
//!   The 8 characters are pipenv's hash of the Pipfile's path ([`pipenv_hash`]): that env is
//!   the one when it exists, else every env of the name matches.
//! - `.pdm-python`: the venv PDM chose (`pdm run` uses it; outside the project with
//!   `venv.in_project = false`).
//! - `$UV_PROJECT_ENVIRONMENT` (what `uv run` uses instead of `.venv`), and Pixi's
//!   `.pixi/envs/default` (what `pixi run` uses).
//! - `environment.yml` / `environment.yaml`: its top-level `name:`, looked up as a conda env; an
//!   env that was never created is kept as a missing interpreter under the first conda root.
//!
//! Source details: `/proj/.venv`; `/home/u/.cache/pypoetry/virtualenvs/demo-AbCd1234-py3.11
//! (Poetry env of "demo" from /proj/pyproject.toml)`; `/home/u/.local/share/virtualenvs/
//! proj-AbCd1234 (Pipenv env of directory proj)`; `/proj/environment.yml name: ml`.

use super::locate::{env_path, interpreter_or_default, source, Collector, Hint};
use crate::snapshot::python::{PythonKind, SourceKind};
use std::path::{Path, PathBuf};

/// All project environments (nothing without a project directory).
pub fn discover(c: &mut Collector) {
    let Some(project) = c.project.clone() else {
        return;
    };
    // First: with it set, `uv run` uses it and not `.venv`.
    uv_project_environment(c, &project);
    pdm_python(c, &project);
    for d in [".venv", "venv", "env"] {
        let prefix = project.join(d);
        if c.root.is_file(&prefix.join("pyvenv.cfg")) {
            let py = interpreter_or_default(c.root, &prefix);
            let detail = prefix.display().to_string();
            c.add(
                &py,
                source(SourceKind::ProjectVenv, detail),
                Hint::kind(PythonKind::Venv),
            );
        }
    }
    pixi(c, &project);
    poetry(c, &project);
    pipenv(c, &project);
    environment_yml(c, &project);
}

/// `$UV_PROJECT_ENVIRONMENT`: the environment `uv run`/`uv sync` use instead of `.venv`
/// (relative to the project when relative).
fn uv_project_environment(c: &mut Collector, project: &Path) {
    let Some(dir) = env_path(c.env, "UV_PROJECT_ENVIRONMENT") else {
        return;
    };
    let prefix = crate::root::lexical_normalize(&project.join(dir));
    let py = interpreter_or_default(c.root, &prefix);
    let detail = format!("{} (UV_PROJECT_ENVIRONMENT)", prefix.display());
    c.add(
        &py,
        source(SourceKind::ProjectVenv, detail),
        Hint::kind(PythonKind::Venv),
    );
}

/// `.pdm-python`: the interpreter PDM chose for the project (`pdm use`, or the venv `pdm
/// install` made), which `pdm run` uses: with `venv.in_project = false` a venv under
/// `~/.local/share/pdm/venvs/`. Only a venv counts: a bare interpreter there means PEP 582
/// mode (packages in `__pypackages__`, not in it) or a conda env (not read here).
fn pdm_python(c: &mut Collector, project: &Path) {
    let file = project.join(".pdm-python");
    let Some(text) = c.read_text(&file) else {
        return;
    };
    let py = PathBuf::from(text.lines().next().unwrap_or("").trim());
    let Some(prefix) = py.parent().and_then(Path::parent) else {
        return;
    };
    if !py.is_absolute() || !c.root.is_file(&prefix.join("pyvenv.cfg")) {
        return;
    }
    let detail = format!("{} ({})", prefix.display(), file.display());
    c.add(
        &py,
        source(SourceKind::ProjectVenv, detail),
        Hint::kind(PythonKind::Venv),
    );
}

/// The Pixi environment `pixi run` uses: `.pixi/envs/default` (a conda prefix).
fn pixi(c: &mut Collector, project: &Path) {
    let prefix = project.join(".pixi/envs/default");
    if !c.root.is_dir(&prefix) {
        return;
    }
    let py = interpreter_or_default(c.root, &prefix);
    c.add(
        &py,
        source(SourceKind::Pixi, prefix.display().to_string()),
        Hint {
            kind: Some(PythonKind::Conda),
            conda_env: Some("default".into()),
        },
    );
}

fn home_or(c: &Collector, var: &str, under_home: &str) -> Option<PathBuf> {
    env_path(c.env, var)
        .filter(|p| p.is_absolute())
        .or_else(|| c.home().map(|h| h.join(under_home)))
}

/// The entries of `dir` whose name is `<name>-<8 hash chars><suffix…>`.
fn hashed_envs(c: &mut Collector, dir: &Path, name: &str, poetry: bool) -> Vec<PathBuf> {
    let want = format!("{name}-");
    c.list_dir(dir)
        .into_iter()
        .filter(|p| {
            let Some(n) = p.file_name().and_then(|n| n.to_str()) else {
                return false;
            };
            let Some(rest) = n.strip_prefix(&want) else {
                return false;
            };
            let hash_ok = |h: &str| {
                h.len() == 8
                    && h.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            };
            if poetry {
                // `<hash>-pyX.Y`; the hash itself may contain `-`.
                rest.len() > 9
                    && rest.is_char_boundary(8)
                    && hash_ok(&rest[..8])
                    && rest[8..].starts_with("-py")
            } else {
                hash_ok(rest)
            }
        })
        .collect()
}

fn poetry(c: &mut Collector, project: &Path) {
    let file = project.join("pyproject.toml");
    let Some(text) = c.read_text(&file) else {
        return;
    };
    let Some(raw) = pyproject_name(&text) else {
        return;
    };
    let name = poetry_env_name(&raw);
    let dir = match env_path(c.env, "POETRY_VIRTUALENVS_PATH").filter(|p| p.is_absolute()) {
        Some(d) => d,
        None => match env_path(c.env, "POETRY_CACHE_DIR").filter(|p| p.is_absolute()) {
            Some(d) => d.join("virtualenvs"),
            None => match home_or(c, "XDG_CACHE_HOME", ".cache") {
                Some(d) => d.join("pypoetry/virtualenvs"),
                None => return,
            },
        },
    };
    for env in hashed_envs(c, &dir, &name, true) {
        let py = interpreter_or_default(c.root, &env);
        let detail = format!(
            "{} (Poetry env of \"{raw}\" from {})",
            env.display(),
            file.display()
        );
        c.add(
            &py,
            source(SourceKind::Poetry, detail),
            Hint::kind(PythonKind::Venv),
        );
    }
}

fn pipenv(c: &mut Collector, project: &Path) {
    let Some(dirname) = project.file_name().and_then(|n| n.to_str()) else {
        return;
    };
    let name = sanitize(dirname, "&$`!*@\"()[]\\");
    let dir = match env_path(c.env, "WORKON_HOME").filter(|p| p.is_absolute()) {
        Some(d) => d,
        None => match home_or(c, "XDG_DATA_HOME", ".local/share") {
            Some(d) => d.join("virtualenvs"),
            None => return,
        },
    };
    // Pipenv's own name for it when it exists; else every env of the directory's name.
    let exact = dir.join(format!("{name}-{}", pipenv_hash(&project.join("Pipfile"))));
    let envs = if c.root.is_file(&exact.join("pyvenv.cfg")) {
        vec![exact]
    } else {
        hashed_envs(c, &dir, &name, false)
    };
    for env in envs {
        let py = interpreter_or_default(c.root, &env);
        let detail = format!("{} (Pipenv env of directory {dirname})", env.display());
        c.add(
            &py,
            source(SourceKind::Pipenv, detail),
            Hint::kind(PythonKind::Venv),
        );
    }
}

/// Pipenv's 8 characters: URL-safe base64 of the first 6 bytes of the SHA-256 of the
/// Pipfile's path (pipenv's `VirtualenvLocator._get_virtualenv_hash`; checked against pipenv
/// 2026.10.3, which named `/tmp/pvt/proj`'s env `proj-GB1sjHCx`).
fn pipenv_hash(pipfile: &Path) -> String {
    use sha2::Digest;
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let d = sha2::Sha256::digest(pipfile.as_os_str().as_encoded_bytes());
    let mut out = String::new();
    for chunk in d[..6].chunks(3) {
        let n = (u32::from(chunk[0]) << 16) | (u32::from(chunk[1]) << 8) | u32::from(chunk[2]);
        for shift in [18, 12, 6, 0] {
            out.push(char::from(ABC[((n >> shift) & 63) as usize]));
        }
    }
    out
}

fn environment_yml(c: &mut Collector, project: &Path) {
    for f in ["environment.yml", "environment.yaml"] {
        let file = project.join(f);
        let Some(text) = c.read_text(&file) else {
            continue;
        };
        let Some(name) = yaml_name(&text) else {
            continue;
        };
        let detail = format!("{} name: {name}", file.display());
        let (found, would_be) = super::conda::find_env(c, &name);
        let hint = Hint {
            kind: Some(PythonKind::Conda),
            conda_env: Some(name.clone()),
        };
        if let Some(prefix) = found.or(would_be) {
            let py = interpreter_or_default(c.root, &prefix);
            c.add(&py, source(SourceKind::CondaEnvironmentYml, detail), hint);
        }
        return;
    }
}

/// The top-level `name:` of an `environment.yml`.
fn yaml_name(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let v = l.strip_prefix("name:")?;
        let v = v.split(" #").next().unwrap_or("").trim();
        let v = v.trim_matches(|ch| ch == '"' || ch == '\'');
        (!v.is_empty()).then(|| v.to_string())
    })
}

/// The project name of a `pyproject.toml`: `[project] name`, else `[tool.poetry] name`. A line
/// reader: enough for the `name = "..."` lines these tables hold.
fn pyproject_name(text: &str) -> Option<String> {
    let mut table = String::new();
    let (mut project, mut poetry) = (None, None);
    for line in text.lines() {
        let l = line.trim();
        if l.starts_with('[') {
            table = l
                .trim_start_matches('[')
                .trim_end_matches(']')
                .trim()
                .to_string();
            continue;
        }
        let Some((k, v)) = l.split_once('=') else {
            continue;
        };
        if k.trim() != "name" {
            continue;
        }
        let v = v.trim();
        let Some(q) = v.chars().next().filter(|ch| *ch == '"' || *ch == '\'') else {
            continue;
        };
        let v = v[1..].split(q).next().unwrap_or("").to_string();
        match table.as_str() {
            "project" => project = project.or(Some(v)),
            "tool.poetry" => poetry = poetry.or(Some(v)),
            _ => {}
        }
    }
    project.or(poetry).filter(|n| !n.is_empty())
}

/// Poetry's env name prefix for a project name.
fn poetry_env_name(name: &str) -> String {
    // PEP 503 first (poetry's package name is canonicalised), then poetry's own sanitising.
    let mut canon = String::new();
    let mut sep = false;
    for ch in name.chars() {
        if matches!(ch, '-' | '_' | '.') {
            sep = true;
            continue;
        }
        if sep && !canon.is_empty() {
            canon.push('-');
        }
        sep = false;
        canon.extend(ch.to_lowercase());
    }
    sanitize(&canon, "$`!*@\"\\").to_lowercase()
}

/// Replace whitespace and `chars` with `_`, keep at most 42 characters.
fn sanitize(name: &str, chars: &str) -> String {
    name.chars()
        .map(|ch| {
            if ch == ' ' || ch == '\r' || ch == '\n' || ch == '\t' || chars.contains(ch) {
                '_'
            } else {
                ch
            }
        })
        .take(42)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipenv_names_its_env_as_pipenv_does() {
        // What pipenv 2026.10.3 printed for `pipenv --python …` in /tmp/pvt/proj.
        assert_eq!(pipenv_hash(Path::new("/tmp/pvt/proj/Pipfile")), "GB1sjHCx");
    }

    #[test]
    fn pyproject_names() {
        let both = "[build-system]\nname = \"nope\"\n[project]\nname = \"My_Proj\" # c\n\
                    [tool.poetry]\nname = 'other'\n";
        assert_eq!(pyproject_name(both).as_deref(), Some("My_Proj"));
        let poetry = "[tool.poetry]\nversion = \"1\"\nname = 'demo.app'\n";
        assert_eq!(pyproject_name(poetry).as_deref(), Some("demo.app"));
        assert_eq!(pyproject_name("[tool.black]\nline-length = 88\n"), None);
        assert_eq!(pyproject_name("[project]\nname = unquoted\n"), None);
        let odd = "[tool.x]\nname = 5\n[project]\nname = \"real\"\n";
        assert_eq!(pyproject_name(odd).as_deref(), Some("real"));
    }

    #[test]
    fn poetry_normalises_like_poetry() {
        assert_eq!(poetry_env_name("My_Proj..Name"), "my-proj-name");
        assert_eq!(poetry_env_name("a b$c"), "a_b_c");
        assert_eq!(poetry_env_name(&"x".repeat(50)).len(), 42);
    }

    #[test]
    fn environment_yml_name() {
        assert_eq!(
            yaml_name("# env\nname: ml-cu12 # the training env\nchannels:\n  - conda-forge\n")
                .as_deref(),
            Some("ml-cu12")
        );
        assert_eq!(yaml_name("dependencies:\n  - name: x\n"), None);
        assert_eq!(yaml_name("name: \"q\"\n").as_deref(), Some("q"));
    }
}
