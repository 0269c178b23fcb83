//! The serialized-file probe (registered as `serialized`, stage 2): the names each checkpoint's
//! `references` lists (pickle globals, Keras custom-object modules; read by the `checkpoint`
//! probe, never unpickled) resolved against the job's interpreter as its importer would find
//! them, from files only ([`resolve`]). Fills `checkpoints[].references.checked_with` and
//! `.unresolved`.
//!
//! Nothing is imported or run: a module exists when a file or package directory of that name is
//! on the interpreter's `sys.path` (or, for a top-level name, in the project, where the user's
//! own code lives); a class or function exists when the module's `.py` source mentions the name
//! as a word (a static text search). Modules that build their names at run time (`__getattr__`,
//! star imports, `globals()`, `sys.modules` edits) and extension modules are given the benefit of
//! the doubt: only what is certainly missing is reported.

pub mod resolve;

use super::{Apply, Context};
use crate::snapshot::checkpoint::UnresolvedReference;
use crate::snapshot::python::PythonRole;
use crate::snapshot::ProbeError;
use std::path::{Path, PathBuf};

const PROBE: &str = "serialized";

/// Most unresolved references kept per file.
pub const MAX_UNRESOLVED: usize = 32;

/// The probe entry point.
pub fn probe(ctx: &Context) -> Apply {
    let snap = &ctx.earlier;
    let Some(py) = snap
        .pythons
        .iter()
        .find(|p| p.exists && p.roles.contains(&PythonRole::Job))
    else {
        return Box::new(|_| {});
    };
    let mut resolver = resolve::Resolver::new(ctx.root(), py, ctx.opts.project.as_deref());
    let mut results: Vec<(String, Vec<UnresolvedReference>)> = Vec::new();
    let mut errors = Vec::new();
    for ck in &snap.checkpoints {
        let Some(refs) = &ck.references else {
            continue;
        };
        if ctx.remaining().is_zero() {
            errors.push(ProbeError::new(
                PROBE,
                "deadline reached; the references of the remaining files were not resolved",
            ));
            break;
        }
        let here = checkpoint_dirs(Path::new(&ck.path));
        let unresolved: Vec<UnresolvedReference> = refs
            .globals
            .iter()
            .filter_map(|g| resolver.check(g, &here))
            .take(MAX_UNRESOLVED)
            .collect();
        results.push((ck.path.clone(), unresolved));
    }
    let checked_with = py.path.clone();
    Box::new(move |snap| {
        for ck in &mut snap.checkpoints {
            let (Some(refs), Some((_, unresolved))) = (
                &mut ck.references,
                results.iter_mut().find(|(p, _)| *p == ck.path),
            ) else {
                continue;
            };
            refs.checked_with = Some(checked_with.clone());
            refs.unresolved = std::mem::take(unresolved);
        }
        snap.probe_errors.extend(errors);
    })
}

/// Where a file's own code may sit: its directory and the one above (a script that saves to
/// `checkpoints/` runs from the directory above it).
fn checkpoint_dirs(path: &Path) -> Vec<PathBuf> {
    path.ancestors()
        .skip(1)
        .take(2)
        .map(Path::to_path_buf)
        .collect()
}
