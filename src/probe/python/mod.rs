//! The Python probe: every interpreter a job here could use, read statically.
//!
//! Nothing is ever executed: interpreters, shims and scripts are read as files. The probe has two
//! halves, kept apart so each can be tested alone:
//! - [`discovery`] finds interpreters and everything that names them (PATH, pip shebangs, pyenv,
//!   conda, project venvs, IDE settings, Jupyter kernels), deduplicated on the canonical path;
//! - [`interp`] inspects one interpreter: version, kind, prefix, the import path as Python builds
//!   it, installed distributions ([`dist_info`]) and shadowing.

pub mod conda;
pub mod discovery;
pub mod discovery_path;
pub mod dist_info;
pub mod ide;
pub mod interp;
pub mod project;
pub mod pyenv;

use super::{Apply, Context};
use crate::snapshot::ProbeError;

/// The probe entry point (registered as `python`).
pub fn probe(ctx: &Context) -> Apply {
    let mut errors: Vec<ProbeError> = Vec::new();
    let found = discovery::discover(ctx, &mut errors);
    let pythons: Vec<_> = found
        .iter()
        .map(|f| interp::inspect(ctx.root(), ctx.env(), f, &mut errors))
        .collect();
    Box::new(move |snap| {
        snap.pythons.extend(pythons);
        snap.probe_errors.extend(errors);
    })
}
