//! Interpreter discovery: who names which interpreter. Static: nothing is executed.

use super::super::Context;
use crate::snapshot::python::{PythonKind, Source, SourceKind};
use crate::snapshot::ProbeError;
use std::path::PathBuf;

/// An interpreter found, with every source that named it.
#[derive(Clone, Debug, PartialEq)]
pub struct Found {
    /// The interpreter as first named (not canonicalised).
    pub path: PathBuf,
    /// Its canonical machine path, `None` when it does not exist.
    pub canonical: Option<PathBuf>,
    /// Everything that named it, in discovery order.
    pub sources: Vec<Source>,
    /// What the naming source implies about its kind (a conda env list implies conda).
    pub kind_hint: Option<PythonKind>,
    /// A conda env name, when the source gave one.
    pub conda_env: Option<String>,
}

/// Find every interpreter (PATH only for now).
pub fn discover(ctx: &Context, errors: &mut Vec<ProbeError>) -> Vec<Found> {
    let root = ctx.root();
    let mut out: Vec<Found> = Vec::new();
    for (i, dir) in ctx.env().split_path("PATH").iter().enumerate() {
        for name in ["python", "python3"] {
            let p = dir.join(name);
            if !p.is_absolute() || !root.exists(&p) {
                continue;
            }
            let canonical = match root.canonicalize(&p) {
                Ok(c) => c,
                Err(e) => {
                    errors.push(ProbeError::from_root("python", &e));
                    continue;
                }
            };
            let source = Source {
                kind: SourceKind::Path,
                detail: format!("{name} (PATH entry {i}: {})", dir.display()),
            };
            match out
                .iter_mut()
                .find(|f| f.canonical.as_ref() == Some(&canonical))
            {
                Some(f) => f.sources.push(source),
                None => out.push(Found {
                    path: p,
                    canonical: Some(canonical),
                    sources: vec![source],
                    kind_hint: None,
                    conda_env: None,
                }),
            }
        }
    }
    out
}
