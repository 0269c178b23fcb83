//! Helpers shared by the integration tests: `cc` builds real libraries, `fw` runs envdoctor on
//! framework venvs and compares with the real loader, `machine` builds fake machines under a
//! root, `pypi` caches real venvs and wheels from PyPI.

pub mod cc;
pub mod fw;
pub mod machine;
pub mod pypi;
