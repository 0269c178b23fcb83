//! Numeric dotted versions for CUDA, cuDNN and driver releases (`12.4`, `9.1.0.70`, `580.65.06`).
//!
//! semver rejects these (two or four components, leading zeros), and PEP 440 is for Python
//! packages only. A [`DottedVersion`] compares component by component as numbers, a missing
//! component counting as zero (`12.4 == 12.4.0`). Python package versions use `pep440_rs`.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

/// A version made of dot-separated non-negative integers.
#[derive(Clone, Debug, Eq)]
pub struct DottedVersion {
    parts: Vec<u64>,
    raw: String,
}

/// Why a string is not a dotted version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a dotted numeric version (like 12.4 or 580.65.06)")]
pub struct ParseDottedError(pub String);

impl DottedVersion {
    /// The numeric components, as written.
    pub fn parts(&self) -> &[u64] {
        &self.parts
    }

    /// The first component.
    pub fn major(&self) -> u64 {
        self.parts.first().copied().unwrap_or(0)
    }

    /// The second component, 0 when absent.
    pub fn minor(&self) -> u64 {
        self.parts.get(1).copied().unwrap_or(0)
    }

    /// The string it was parsed from.
    pub fn as_str(&self) -> &str {
        &self.raw
    }

    /// Build from components.
    pub fn from_parts(parts: &[u64]) -> Self {
        let raw = parts
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join(".");
        DottedVersion {
            parts: parts.to_vec(),
            raw,
        }
    }

    /// Parse the leading dotted number of `s` (`"11.1.74 (build x)"` → `11.1.74`), if any.
    pub fn parse_prefix(s: &str) -> Option<Self> {
        let s = s.trim();
        let end = s
            .char_indices()
            .find(|(_, c)| !(c.is_ascii_digit() || *c == '.'))
            .map(|(i, _)| i)
            .unwrap_or(s.len());
        s[..end].trim_end_matches('.').parse().ok()
    }
}

impl FromStr for DottedVersion {
    type Err = ParseDottedError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        if t.is_empty() {
            return Err(ParseDottedError(s.to_string()));
        }
        let parts = t
            .split('.')
            .map(|p| {
                if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
                    Err(ParseDottedError(s.to_string()))
                } else {
                    p.parse::<u64>()
                        .map_err(|_| ParseDottedError(s.to_string()))
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(DottedVersion {
            parts,
            raw: t.to_string(),
        })
    }
}

impl Ord for DottedVersion {
    fn cmp(&self, other: &Self) -> Ordering {
        let n = self.parts.len().max(other.parts.len());
        for i in 0..n {
            let a = self.parts.get(i).copied().unwrap_or(0);
            let b = other.parts.get(i).copied().unwrap_or(0);
            match a.cmp(&b) {
                Ordering::Equal => continue,
                o => return o,
            }
        }
        Ordering::Equal
    }
}

impl PartialOrd for DottedVersion {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for DottedVersion {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl fmt::Display for DottedVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> DottedVersion {
        s.parse().unwrap()
    }

    #[test]
    fn parses_what_semver_rejects() {
        assert_eq!(v("12.4").parts(), &[12, 4]);
        assert_eq!(v("9.1.0.70").parts(), &[9, 1, 0, 70]);
        assert_eq!(v("580.65.06").parts(), &[580, 65, 6]);
        assert_eq!(v("580.65.06").to_string(), "580.65.06");
    }

    #[test]
    fn compares_numerically_with_missing_parts_as_zero() {
        assert!(v("12.10") > v("12.9"));
        assert_eq!(v("12.4"), v("12.4.0"));
        assert!(v("525.60.13") < v("580.65.06"));
        assert!(v("11.0") < v("11.1"));
    }

    #[test]
    fn rejects_garbage() {
        for bad in ["", "12.", ".4", "12.x", "1..2", "v12", "-1"] {
            assert!(bad.parse::<DottedVersion>().is_err(), "{bad}");
        }
    }

    #[test]
    fn parse_prefix_takes_the_leading_number() {
        assert_eq!(
            DottedVersion::parse_prefix("11.1.74 (build)").unwrap(),
            v("11.1.74")
        );
        assert_eq!(DottedVersion::parse_prefix("12.4.").unwrap(), v("12.4"));
        assert!(DottedVersion::parse_prefix("abc").is_none());
    }
}
