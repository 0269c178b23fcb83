//! The Python probe: every interpreter a job here could use, read statically.
//!
//! Nothing is ever executed: interpreters, shims and scripts are read as files. The probe has two
//! halves, kept apart so each can be tested alone:
//! - [`discovery`] finds interpreters and everything that names them (PATH, pip shebangs, pyenv,
//!   conda, project venvs, IDE settings, Jupyter kernels), deduplicated on the canonical path;
//! - [`interp`] inspects one interpreter: [`site`] works out its kind, prefix, version and import
//!   path (with [`pth`] files), [`dist_info`] reads the distributions on that path, and
//!   [`requires`] checks their `Requires-Dist` against each other (a static `pip check`).
//!
//! This module is the glue: interpreters are inspected in parallel (at most
//! `available_parallelism` threads pulling from one queue), and the probe deadline is checked
//! before each interpreter so that a slow machine still yields the interpreters done in time.

pub mod conda;
pub mod discovery;
pub mod discovery_path;
pub mod dist_info;
pub mod ide;
pub mod interp;
pub mod locate;
pub mod owner;
pub mod project;
pub mod pth;
pub mod pyenv;
pub mod requires;
pub mod site;

use super::{Apply, Context};
use crate::root::{Env, Root};
use crate::snapshot::{ProbeError, Python};
use discovery::Found;
use std::time::Instant;

/// The probe entry point (registered as `python`).
pub fn probe(ctx: &Context) -> Apply {
    let mut errors: Vec<ProbeError> = Vec::new();
    let found = discovery::discover(ctx, &mut errors);
    // Markers name the machine's architecture: this one's, or x86_64 for a copied tree.
    let machine = if ctx.root().is_host() {
        std::env::consts::ARCH
    } else {
        requires::DEFAULT_MACHINE
    };
    let mut pythons = inspect_all_with(
        ctx.root(),
        ctx.env(),
        &found,
        ctx.deadline,
        &mut errors,
        Some(machine),
    );
    crate::snapshot::derived::assign_families(&mut pythons);
    crate::snapshot::derived::assign_roles(&mut pythons);
    crate::snapshot::derived::ide_drift(&mut pythons);
    Box::new(move |snap| {
        snap.pythons.extend(pythons);
        snap.probe_errors.extend(errors);
    })
}

/// Inspect every interpreter, in parallel, in `found`'s order. Interpreters not started before
/// `deadline` keep only what discovery knew, and one probe error says how many were skipped.
pub fn inspect_all(
    root: &Root,
    env: &Env,
    found: &[Found],
    deadline: Instant,
    errors: &mut Vec<ProbeError>,
) -> Vec<Python> {
    inspect_all_with(root, env, found, deadline, errors, None)
}

/// [`inspect_all`], and with `machine` the static `pip check` of each interpreter too, on the
/// same worker threads (parsing every `Requires-Dist` is a tenth of a 10,000-distribution
/// snapshot: done after the inspection, it ran on one core).
pub fn inspect_all_with(
    root: &Root,
    env: &Env,
    found: &[Found],
    deadline: Instant,
    errors: &mut Vec<ProbeError>,
    machine: Option<&str>,
) -> Vec<Python> {
    let slots = super::pool::map_in_order(found, deadline, |f| inspect_one(root, env, f, machine));
    let out = slots
        .into_iter()
        .map(|slot| match slot {
            super::pool::Slot::Done((py, errs)) => {
                errors.extend(errs);
                Some(py)
            }
            // inspect_one catches its own panics; a slot that still panicked keeps only what
            // discovery knew, like one the deadline left out.
            super::pool::Slot::Panicked => {
                errors.push(ProbeError::new(
                    "python",
                    "an interpreter inspection failed unexpectedly (a bug in envdoctor)",
                ));
                None
            }
            super::pool::Slot::Skipped => None,
        })
        .collect();
    named_the_rest(out, found, errors)
}

/// Inspect one interpreter (a panic keeps only what discovery knew) and, with `machine`, check
/// its requirements.
fn inspect_one(
    root: &Root,
    env: &Env,
    f: &Found,
    machine: Option<&str>,
) -> (Python, Vec<ProbeError>) {
    let mut errs = Vec::new();
    // A panic in one interpreter's files costs that interpreter only, not its neighbours.
    let mut py = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        interp::inspect(root, env, f, &mut errs)
    }))
    .unwrap_or_else(|_| {
        errs.push(ProbeError::new(
            "python",
            format!(
                "inspecting {} failed unexpectedly (a bug in envdoctor); only what \
                 discovery knew is kept",
                f.path.display()
            ),
        ));
        interp::named(f)
    });
    if let Some(machine) = machine {
        let (unmet, problems) = requires::unmet_checked(&py, machine);
        // One package's metadata is a fact about that file (pip only warns), not a failed
        // probe: the run stays complete.
        errs.extend(
            problems
                .into_iter()
                .map(|(path, m)| ProbeError::at("python", path, m)),
        );
        let (kept, omitted) =
            requires::bounded(unmet, crate::snapshot::python::UNMET_REQUIREMENTS_KEPT);
        py.unmet_requirements = kept;
        py.unmet_requirements_omitted = omitted;
    }
    (py, errs)
}

/// Every interpreter in `found`'s order: the inspected ones, and those the deadline left out
/// with only what discovery knew (one error says how many).
fn named_the_rest(
    out: Vec<Option<Python>>,
    found: &[Found],
    errors: &mut Vec<ProbeError>,
) -> Vec<Python> {
    let mut skipped = 0usize;
    let pythons = out
        .into_iter()
        .zip(found)
        .map(|(py, f)| {
            py.unwrap_or_else(|| {
                skipped += 1;
                interp::named(f)
            })
        })
        .collect();
    if skipped > 0 {
        errors.push(ProbeError::new(
            "python",
            format!(
                "the deadline passed before {skipped} of {} interpreters were inspected; \
                 they are listed without version, path or packages (raise --deadline)",
                found.len()
            ),
        ));
    }
    pythons
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};
    use std::time::Duration;

    fn found(path: &str) -> Found {
        Found {
            path: PathBuf::from(path),
            canonical: Some(PathBuf::from(path)),
            sources: Vec::new(),
            kind_hint: None,
            conda_env: None,
        }
    }

    /// Eight small venvs under a temp root, each with one distribution named after it.
    fn machine() -> (tempfile::TempDir, Vec<Found>) {
        let t = tempfile::tempdir().unwrap();
        let mut out = Vec::new();
        for i in 0..8 {
            let v = t.path().join(format!("v{i}"));
            let di = v.join(format!(
                "lib/python3.11/site-packages/pkg{i}-1.{i}.dist-info"
            ));
            std::fs::create_dir_all(&di).unwrap();
            std::fs::create_dir_all(v.join("bin")).unwrap();
            std::fs::write(v.join("bin/python"), "").unwrap();
            std::fs::write(
                v.join("pyvenv.cfg"),
                "home = /usr/bin\nversion = 3.11.4\ninclude-system-site-packages = false\n",
            )
            .unwrap();
            std::fs::write(
                di.join("METADATA"),
                format!("Name: pkg{i}\nVersion: 1.{i}\n\n"),
            )
            .unwrap();
            out.push(found(&format!("/v{i}/bin/python")));
        }
        (t, out)
    }

    #[test]
    fn parallel_inspection_keeps_discovery_order() {
        let (t, f) = machine();
        let root = Root::new(t.path());
        let mut errors = Vec::new();
        let later = Instant::now() + Duration::from_secs(60);
        let pys = inspect_all(&root, &Env::default(), &f, later, &mut errors);
        assert!(errors.is_empty(), "{errors:?}");
        for (i, py) in pys.iter().enumerate() {
            assert_eq!(Path::new(&py.path), f[i].path);
            assert_eq!(py.version.as_deref(), Some("3.11.4"));
            assert_eq!(py.packages.len(), 1);
            assert_eq!(py.packages[0].name, format!("pkg{i}"));
        }
    }

    #[test]
    fn a_passed_deadline_keeps_what_discovery_knew_and_says_so() {
        let (t, f) = machine();
        let root = Root::new(t.path());
        let mut errors = Vec::new();
        let pys = inspect_all(&root, &Env::default(), &f, Instant::now(), &mut errors);
        assert_eq!(pys.len(), f.len());
        assert!(pys
            .iter()
            .all(|p| p.version.is_none() && p.packages.is_empty()));
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].message.contains("8 of 8"),
            "{}",
            errors[0].message
        );
    }
}
