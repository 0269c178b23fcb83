//! The lock probe: the project's lock files and pinned requirements, read as their tools
//! define them, and the job's environment compared with the one its tool would sync.
//!
//! One reader per format ([`uv`], [`pylock`], [`poetry`], [`pdm`], [`pipfile`],
//! [`requirements`], [`conda`] for `environment.yml` and `conda-lock.yml`, [`pixi`]), each
//! producing [`model::Entry`]s for one interpreter ([`model::Target`]: markers evaluated for its
//! Python version and platform); [`drift`] compares them with what is installed; [`stale`]
//! compares a lock with `pyproject.toml`. Stage 2: it reads the interpreters the python probe
//! found. Nothing named in a project file is executed.

pub mod model;
pub mod uv;
pub mod pdm;
pub mod pipfile;
pub mod poetry;
pub mod pylock;
pub mod requirements;
pub mod stale;
