//! Version changes: direction (upgrade / downgrade) and size (major, minor, patch, pre-release,
//! post, dev, local tag) of a changed version.
//!
//! Python packages and interpreter versions compare under PEP 440 (`pep440_rs`), keeping the
//! local label (`+cu118` → `+cu121`) as its own part of the answer because specifiers ignore it;
//! CUDA, cuDNN and driver versions compare as numeric dotted versions ([`DottedVersion`]).
//! A version that parses under neither is compared as text: no direction, size `unknown`.

use crate::version::DottedVersion;
use pep440_rs::Version;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::str::FromStr;

/// How a value is compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueKind {
    /// Plain text: equal or not.
    Text,
    /// A PEP 440 version (Python packages, the interpreter).
    Pep440,
    /// A numeric dotted version (CUDA, cuDNN, the driver).
    Dotted,
}

/// Which way a version moved from A to B.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    /// B is newer.
    Upgrade,
    /// B is older.
    Downgrade,
    /// The text differs but the versions are equal (`1.0` and `1.0.0`).
    Same,
}

/// The most significant part of a version that changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Size {
    /// The PEP 440 epoch (`1!`).
    Epoch,
    /// The first release component.
    Major,
    /// The second release component.
    Minor,
    /// Any later release component.
    Patch,
    /// The pre-release part (`rc1`, `b2`).
    PreRelease,
    /// The post-release part (`.post1`).
    Post,
    /// The dev-release part (`.dev0`).
    Dev,
    /// Only the local label (`+cu118` → `+cu121`).
    Local,
    /// Not comparable as versions (text differs).
    Unknown,
}

/// What a version change amounts to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VersionChange {
    /// Upgrade / downgrade (None when not comparable).
    pub direction: Option<Direction>,
    /// Most significant part changed.
    pub size: Option<Size>,
    /// The local labels, when they differ (`("cu118", "cu121")`; empty string for none).
    pub local: Option<(String, String)>,
}

fn direction(o: Ordering) -> Direction {
    match o {
        Ordering::Less => Direction::Upgrade,
        Ordering::Greater => Direction::Downgrade,
        Ordering::Equal => Direction::Same,
    }
}

/// The size of a change between two release tuples (missing components count as 0).
fn release_size(a: &[u64], b: &[u64]) -> Option<Size> {
    let n = a.len().max(b.len());
    for i in 0..n {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        if x != y {
            return Some(match i {
                0 => Size::Major,
                1 => Size::Minor,
                _ => Size::Patch,
            });
        }
    }
    None
}

/// Classify a change from `a` to `b` as `kind` says.
pub fn classify(kind: ValueKind, a: &str, b: &str) -> VersionChange {
    match kind {
        ValueKind::Text => VersionChange::default(),
        ValueKind::Pep440 => pep440(a, b),
        ValueKind::Dotted => dotted(a, b),
    }
}

fn unknown() -> VersionChange {
    VersionChange {
        direction: None,
        size: Some(Size::Unknown),
        local: None,
    }
}

/// PEP 440 classification.
pub fn pep440(a: &str, b: &str) -> VersionChange {
    let (Ok(va), Ok(vb)) = (Version::from_str(a.trim()), Version::from_str(b.trim())) else {
        return unknown();
    };
    let local = |v: &Version| {
        v.local()
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(".")
    };
    let (la, lb) = (local(&va), local(&vb));
    let size = if va.epoch() != vb.epoch() {
        Some(Size::Epoch)
    } else if let Some(s) = release_size(va.release(), vb.release()) {
        Some(s)
    } else if va.pre() != vb.pre() {
        Some(Size::PreRelease)
    } else if va.post() != vb.post() {
        Some(Size::Post)
    } else if va.dev() != vb.dev() {
        Some(Size::Dev)
    } else if la != lb {
        Some(Size::Local)
    } else {
        None
    };
    VersionChange {
        direction: Some(direction(va.cmp(&vb))),
        size,
        local: (la != lb).then_some((la, lb)),
    }
}

/// Numeric dotted classification (CUDA, cuDNN, driver).
pub fn dotted(a: &str, b: &str) -> VersionChange {
    let (Some(va), Some(vb)) = (
        DottedVersion::parse_prefix(a),
        DottedVersion::parse_prefix(b),
    ) else {
        return unknown();
    };
    VersionChange {
        direction: Some(direction(va.cmp(&vb))),
        size: release_size(va.parts(), vb.parts()),
        local: None,
    }
}

/// Whether a Python distribution matters to ML training (ranked before the rest): the one
/// table of names, `crate::snapshot::family`.
pub fn is_ml_package(name: &str) -> bool {
    crate::snapshot::family::is_ml(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pep440_directions_and_sizes() {
        let c = pep440("2.1.0+cu118", "2.3.1+cu121");
        assert_eq!(c.direction, Some(Direction::Upgrade));
        assert_eq!(c.size, Some(Size::Minor));
        assert_eq!(c.local, Some(("cu118".into(), "cu121".into())));
        let c = pep440("2.1.0+cu118", "2.1.0+cu121");
        assert_eq!(c.size, Some(Size::Local));
        assert_eq!(c.direction, Some(Direction::Upgrade));
        let c = pep440("2.0.0", "1.26.4");
        assert_eq!(
            (c.direction, c.size),
            (Some(Direction::Downgrade), Some(Size::Major))
        );
        assert_eq!(pep440("1.15.0", "1.15.1").size, Some(Size::Patch));
        assert_eq!(pep440("2.0.0rc1", "2.0.0").size, Some(Size::PreRelease));
        assert_eq!(
            pep440("2.0.0rc1", "2.0.0").direction,
            Some(Direction::Upgrade)
        );
        assert_eq!(pep440("1.0", "1.0.post1").size, Some(Size::Post));
        assert_eq!(pep440("1.0.dev1", "1.0.dev2").size, Some(Size::Dev));
        assert_eq!(pep440("1!1.0", "2.0").size, Some(Size::Epoch));
        let same = pep440("1.0", "1.0.0");
        assert_eq!((same.direction, same.size), (Some(Direction::Same), None));
        let bad = pep440("garbage-1", "1.0");
        assert_eq!((bad.direction, bad.size), (None, Some(Size::Unknown)));
    }

    #[test]
    fn dotted_versions() {
        let c = dotted("535.104.05", "550.54.15");
        assert_eq!(
            (c.direction, c.size),
            (Some(Direction::Upgrade), Some(Size::Major))
        );
        assert_eq!(dotted("12.4", "12.1").direction, Some(Direction::Downgrade));
        assert_eq!(dotted("12.4", "12.1").size, Some(Size::Minor));
        assert_eq!(dotted("9.1.0.70", "9.1.0.80").size, Some(Size::Patch));
        assert_eq!(dotted("12.4", "12.4.0").direction, Some(Direction::Same));
    }

    #[test]
    fn ml_packages() {
        for n in [
            "torch",
            "nvidia-cudnn-cu12",
            "tensorflow-cpu",
            "numpy",
            "jaxlib",
            "intel-tensorflow",
        ] {
            assert!(is_ml_package(n), "{n}");
        }
        for n in ["six", "requests", "attrs"] {
            assert!(!is_ml_package(n), "{n}");
        }
    }
}
