//! Helpers shared by the integration tests: `bench` is what the report benches share, `cli` runs the built envdoctor in a chosen
//! environment, `cc` builds real libraries, `contract` validates JSON outputs against their
//! schemas, `formats` holds what the output-format and deploy
//! tests share, `fw` runs envdoctor on framework venvs and compares with the real loader,
//! `machine` builds fake machines under a root, `procs` watches processes (alive, gone within a time),
//! `pypi` caches real venvs and wheels from PyPI,
//! `reality` builds and judges the cells of the reality matrix.

pub mod bench;
pub mod cc;
pub mod cli;
pub mod contract;
pub mod formats;
pub mod fw;
pub mod machine;
pub mod procs;
pub mod pypi;
pub mod reality;
