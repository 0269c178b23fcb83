//! envdoctor: a doctor for machine-learning training machines.
//!
//! The flow is `probes -> Snapshot -> rules -> Findings -> reporters`:
//! - [`root`]: the probed machine (a filesystem prefix and an environment);
//! - [`probe`]: probes that read the machine, each under a deadline, into a [`Snapshot`];
//! - [`snapshot`]: the facts, one serde type with a versioned JSON schema;
//! - [`compare`]: the drift between snapshots (two, or a fleet);
//! - [`diagnose`]: from an error log to the rule that explains it, confirmed by the facts;
//! - [`config`]: `envdoctor.toml` / `[tool.envdoctor]` / `ENVDOCTOR_*`, merged under the flags;
//! - [`cli`]: the command-line surface (`main.rs` only parses and exits).
//!
//! See `ARCHITECTURE.md` for the map of modules.

pub mod cli;
pub mod compare;
pub mod config;
pub mod diagnose;
pub mod error;
pub mod exit;
pub mod plural;
pub mod probe;
pub mod report;
pub mod root;
pub mod rules;
pub mod schema;
pub mod snapshot;
pub mod time;
pub mod timings;
pub mod version;

pub use error::Error;
pub use snapshot::Snapshot;
