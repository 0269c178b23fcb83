//! Interpreters named by the environment: `$VIRTUAL_ENV`, `$CONDA_PREFIX`, `python*` on PATH
//! (pyenv shims resolved statically) and the interpreter in the shebang of `pip*` on PATH.
//!
//! Source details: `python3 (PATH entry 2: /usr/bin)`; for a shim
//! `python3 (PATH entry 0: /home/u/.pyenv/shims) is a pyenv shim; version 3.11.7 from ...`;
//! for pip `pip3 (PATH entry 1: /usr/bin): #!/usr/bin/python3` (plus the PATH lookup of an
//! `env` shebang); `VIRTUAL_ENV=/path`, `CONDA_PREFIX=/path`.

use super::locate::{
    env_path, interpreter_or_default, is_executable, is_pip_name, is_python_name, read_head,
    source, Collector, Hint,
};
use crate::snapshot::python::{PythonKind, Source, SourceKind};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// `$VIRTUAL_ENV` and `$CONDA_PREFIX`: the environments active in this shell.
pub fn active_envs(c: &mut Collector) {
    if let Some(prefix) = env_path(c.env, "VIRTUAL_ENV") {
        if prefix.is_absolute() {
            let py = interpreter_or_default(c.root, &prefix);
            let detail = format!("VIRTUAL_ENV={}", prefix.display());
            c.add(
                &py,
                source(SourceKind::VirtualEnv, detail),
                Hint::kind(PythonKind::Venv),
            );
        } else {
            c.error(&prefix, "VIRTUAL_ENV is not an absolute path; ignored");
        }
    }
    if let Some(prefix) = env_path(c.env, "CONDA_PREFIX") {
        if prefix.is_absolute() {
            let py = interpreter_or_default(c.root, &prefix);
            let detail = format!("CONDA_PREFIX={}", prefix.display());
            let hint = Hint {
                kind: Some(PythonKind::Conda),
                conda_env: super::conda::env_name(c.root, &prefix),
            };
            c.add(&py, source(SourceKind::CondaPrefix, detail), hint);
        } else {
            c.error(&prefix, "CONDA_PREFIX is not an absolute path; ignored");
        }
    }
}

/// Absolute PATH entries with their position.
fn path_dirs(c: &Collector) -> Vec<(usize, PathBuf)> {
    c.env
        .split_path("PATH")
        .into_iter()
        .enumerate()
        .filter(|(_, d)| d.is_absolute())
        .collect()
}

/// The files in `dir` whose names pass `pick`, sorted by name.
fn named(c: &mut Collector, dir: &Path, pick: fn(&OsStr) -> bool) -> Vec<PathBuf> {
    c.list_dir(dir)
        .into_iter()
        .filter(|p| p.file_name().is_some_and(pick))
        .collect()
}

/// What a file found on PATH is, as the shell would see it.
enum Candidate {
    /// An executable regular file.
    Exe,
    /// A dangling symlink: a reference to something gone.
    Dangling,
    /// Anything else (not executable, a directory, a reported error).
    Skip,
}

fn candidate(c: &mut Collector, p: &Path) -> Candidate {
    match c.root.metadata(p) {
        Ok(_) if is_executable(c.root, p) => Candidate::Exe,
        Ok(_) => Candidate::Skip,
        Err(e) if e.is_not_found() => Candidate::Dangling,
        Err(e) => {
            c.root_error(&e);
            Candidate::Skip
        }
    }
}

/// `python`, `python3`, `pythonX.Y` on PATH, in PATH order.
pub fn path_interpreters(c: &mut Collector) {
    for (i, dir) in path_dirs(c) {
        for p in named(c, &dir, is_python_name) {
            let name = p
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            let here = format!("{name} (PATH entry {i}: {})", dir.display());
            match candidate(c, &p) {
                Candidate::Skip => continue,
                Candidate::Dangling => {
                    let detail = format!("{here} is a dangling symlink");
                    c.add(&p, source(SourceKind::Path, detail), Hint::default());
                    continue;
                }
                Candidate::Exe => {}
            }
            if let Some(shim) = super::pyenv::shim_root(c, &p) {
                let r = super::pyenv::resolve_shim(c, &shim, &name);
                // pyenv makes a shim for every command of every installed version; a versioned
                // one the selected versions lack is an artefact of that, not a reference.
                if !c.root.exists(&r.path) && name != "python" && name != "python3" {
                    continue;
                }
                let detail = format!("{here} is a pyenv shim; {}", r.how);
                c.add(
                    &r.path,
                    Source::on_path(SourceKind::PyenvShim, &name, i, detail),
                    Hint::default(),
                );
            } else {
                let s = Source::on_path(SourceKind::Path, &name, i, here);
                c.add(&p, s, Hint::default());
            }
        }
    }
}

/// `pip`, `pip3`, `pipX.Y` on PATH: the interpreter their shebang runs.
pub fn pip_shebangs(c: &mut Collector) {
    for (i, dir) in path_dirs(c) {
        for p in named(c, &dir, is_pip_name) {
            if !matches!(candidate(c, &p), Candidate::Exe) {
                continue;
            }
            let name = p
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            let mut here = format!("{name} (PATH entry {i}: {})", dir.display());
            let mut script = p.clone();
            if let Some(shim) = super::pyenv::shim_root(c, &p) {
                let r = super::pyenv::resolve_shim(c, &shim, &name);
                here = format!("{here} is a pyenv shim; {}", r.how);
                script = r.path;
            }
            if !script.is_absolute() {
                continue;
            }
            let Some(head) = read_head(c, &script) else {
                continue;
            };
            let Some(shebang) = parse_shebang(&head) else {
                continue;
            };
            match shebang {
                Shebang::Path(py) => {
                    let detail = format!("{here}: {}", shebang_line(&head));
                    c.add(
                        Path::new(&py),
                        Source::on_path(SourceKind::PipShebang, &name, i, detail),
                        Hint::default(),
                    );
                }
                Shebang::Env(cmd) => {
                    let line = shebang_line(&head);
                    match which(c, &cmd) {
                        Some((py, how)) => {
                            let detail = format!("{here}: {line}; {how}");
                            let s = Source::on_path(SourceKind::PipShebang, &name, i, detail);
                            c.add(&py, s, Hint::default());
                        }
                        None => {
                            let detail = format!("{here}: {line}; {cmd} is not on PATH");
                            c.add(
                                Path::new(&cmd),
                                Source::on_path(SourceKind::PipShebang, &name, i, detail),
                                Hint::default(),
                            );
                        }
                    }
                }
            }
        }
    }
}

fn shebang_line(head: &str) -> String {
    let first = head.lines().next().unwrap_or("").trim_end();
    match head.lines().nth(1) {
        Some(l) if l.starts_with("'''exec'") => format!("{first} + {}", l.trim_end()),
        _ => first.to_string(),
    }
}

/// What a script's shebang runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shebang {
    /// An interpreter named by path.
    Path(String),
    /// `#!/usr/bin/env NAME`: NAME looked up on PATH.
    Env(String),
}

/// The interpreter a script's first lines run: `#!/path/python`, `#!/usr/bin/env python3`, and
/// the `#!/bin/sh` + `'''exec' "/long path/python" "$0" "$@"` form pip writes when the path is too
/// long or has spaces. `None` when there is no shebang or it names no Python.
pub fn parse_shebang(head: &str) -> Option<Shebang> {
    let mut lines = head.lines();
    let rest = lines.next()?.strip_prefix("#!")?.trim();
    let (interp, args) = first_word(rest)?;
    let base = interp.rsplit('/').next().unwrap_or(interp);
    if base == "sh" || base == "bash" {
        let exec = lines.next()?.trim_start().strip_prefix("'''exec'")?;
        let (py, _) = first_word(exec.trim_start())?;
        return Some(Shebang::Path(py.to_string()));
    }
    if base == "env" {
        let mut rest = args;
        loop {
            let (word, more) = first_word(rest)?;
            if word.starts_with('-') || word.contains('=') {
                rest = more;
                continue;
            }
            if word.contains('/') {
                return Some(Shebang::Path(word.to_string()));
            }
            return word
                .starts_with("python")
                .then(|| Shebang::Env(word.to_string()));
        }
    }
    Some(Shebang::Path(interp.to_string()))
}

/// The first word of `s` (quotes `"…"` / `'…'` honoured) and the rest.
fn first_word(s: &str) -> Option<(&str, &str)> {
    let s = s.trim_start();
    if s.is_empty() {
        return None;
    }
    for q in ['"', '\''] {
        if let Some(inner) = s.strip_prefix(q) {
            let end = inner.find(q)?;
            return Some((&inner[..end], &inner[end + 1..]));
        }
    }
    let end = s.find(char::is_whitespace).unwrap_or(s.len());
    Some((&s[..end], &s[end..]))
}

/// Resolve a bare command name as a shell would: the first executable `name` on PATH. A
/// pyenv shim is resolved statically. Returns the interpreter path(s) it stands for (one,
/// or none when nothing on PATH has that name) and a description of how.
pub fn which(c: &mut Collector, name: &str) -> Option<(PathBuf, String)> {
    let path = c.env.split_path("PATH");
    for (i, dir) in path.iter().enumerate() {
        if !dir.is_absolute() {
            continue;
        }
        let cand = dir.join(name);
        if !is_executable(c.root, &cand) {
            continue;
        }
        if let Some(shim) = super::pyenv::shim_root(c, &cand) {
            let r = super::pyenv::resolve_shim(c, &shim, name);
            return Some((
                r.path,
                format!(
                    "PATH lookup: {} (PATH entry {i}) is a pyenv shim; {}",
                    cand.display(),
                    r.how
                ),
            ));
        }
        return Some((cand.clone(), format!("PATH lookup: {}", cand.display())));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shebang_forms() {
        let p = |s: &str| Some(Shebang::Path(s.to_string()));
        assert_eq!(
            parse_shebang("#!/usr/bin/python3\nimport re\n"),
            p("/usr/bin/python3")
        );
        assert_eq!(
            parse_shebang("#! /opt/py/bin/python3.11 -s\n"),
            p("/opt/py/bin/python3.11")
        );
        assert_eq!(
            parse_shebang("#!/usr/bin/env python3\n"),
            Some(Shebang::Env("python3".into()))
        );
        assert_eq!(
            parse_shebang("#!/usr/bin/env -S python3.12 -E\n"),
            Some(Shebang::Env("python3.12".into()))
        );
        assert_eq!(parse_shebang("#!/usr/bin/env bash\n"), None);
        let long =
            "#!/bin/sh\n'''exec' \"/home/u/a very/long/venv/bin/python\" \"$0\" \"$@\"\n' '''\n";
        assert_eq!(
            parse_shebang(long),
            p("/home/u/a very/long/venv/bin/python")
        );
        let unquoted = "#!/bin/sh\n'''exec' /x/bin/python \"$0\" \"$@\"\n";
        assert_eq!(parse_shebang(unquoted), p("/x/bin/python"));
        assert_eq!(parse_shebang("#!/bin/sh\necho hi\n"), None);
        assert_eq!(parse_shebang("\x7fELF\x02\x01"), None);
        assert_eq!(parse_shebang(""), None);
        assert_eq!(parse_shebang("#!\"/a b/python\"\n"), p("/a b/python"));
        assert_eq!(parse_shebang("#!\"/unterminated\n"), None);
    }
}
