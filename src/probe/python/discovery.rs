//! Interpreter discovery: every interpreter a job on this machine could plausibly use, each once,
//! with every reference ([`Source`]) that named it. Static: nothing is ever executed; shims,
//! `pip` scripts and settings files are read as text.
//!
//! The locators live in their own modules and all report through a [`Collector`]:
//! [`super::discovery_path`] (PATH and `pip` shebangs), [`super::pyenv`] (shims and versions),
//! [`super::conda`], [`super::project`] (project venvs, Poetry, Pipenv, `environment.yml`) and
//! [`super::ide`] (VS Code, PyCharm, Jupyter kernelspecs). System pythons are listed here.
//!
//! # Dedupe key
//! Two references name the same interpreter when their keys are equal:
//! - a path `<prefix>/bin/<name>` where `<prefix>/pyvenv.cfg` is a regular file is a venv
//!   interpreter; its key is `(realpath(<prefix>), realpath(path))`. A venv's `bin/python` is a
//!   link to its base interpreter, but Python finds `pyvenv.cfg` beside the link it was started
//!   through, so each venv keeps its own identity and is never merged with its base (nor with
//!   another venv on the same base); `bin/python` and `bin/python3` of one venv merge. As in
//!   PEP 405, only the path as named counts: a link elsewhere (`~/bin/py`) pointing *into* a
//!   venv's `bin/` finds no `pyvenv.cfg` beside itself, so it is keyed as the base interpreter;
//! - any other existing path: `realpath(path)` (all links followed inside the root);
//! - a path that does not exist (or is a dangling link, or a loop): the path itself,
//!   lexically normalised. It is kept with `canonical: None` — a reference to a missing
//!   interpreter is itself a fact.
//!
//! The first reference fixes [`Found::path`] (the spelling as named); later ones only add
//! sources. Discovery order: `VIRTUAL_ENV`, `CONDA_PREFIX`, PATH (shims resolved), `pip`
//! shebangs, the project, IDEs, conda envs, pyenv versions, system pythons, then Jupyter
//! kernelspecs (which are also looked for under every prefix found before them).

use crate::probe::Context;
use crate::snapshot::python::{PythonKind, SourceKind};
use crate::snapshot::ProbeError;
use std::ffi::OsStr;
use std::path::Path;

pub use super::locate::{
    env_path, interpreter_in, interpreter_or_default, is_executable, is_pip_name, is_python_name,
    prefix_kind, source, Collector, Found, Hint, MAX_CONFIG_BYTES, PROBE,
};

/// Find every interpreter. See the module doc for the order and the dedupe key.
pub fn discover(ctx: &Context, errors: &mut Vec<ProbeError>) -> Vec<Found> {
    let mut c = Collector::new(ctx.root(), ctx.env(), ctx.opts.project.clone(), errors);
    super::discovery_path::active_envs(&mut c);
    super::discovery_path::path_interpreters(&mut c);
    super::discovery_path::pip_shebangs(&mut c);
    super::project::discover(&mut c);
    super::ide::vscode(&mut c);
    super::ide::pycharm(&mut c);
    super::conda::discover(&mut c);
    super::pyenv::versions(&mut c);
    system(&mut c);
    super::ide::jupyter(&mut c);
    c.found
}

/// `/usr/bin/python3*` and `/usr/local/bin/python3*` (real interpreter names only).
fn system(c: &mut Collector) {
    for dir in ["/usr/bin", "/usr/local/bin"] {
        for p in c.list_dir(Path::new(dir)) {
            let Some(name) = p.file_name().and_then(OsStr::to_str) else {
                continue;
            };
            if !name.starts_with("python3") || !is_python_name(OsStr::new(name)) {
                continue;
            }
            if !is_executable(c.root, &p) {
                continue;
            }
            let detail = p.to_string_lossy().into_owned();
            c.add(
                &p,
                source(SourceKind::System, detail),
                Hint::kind(PythonKind::System),
            );
        }
    }
}
