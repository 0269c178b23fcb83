//! Style checks on a rule's YAML text that the parsed value can no longer show: an unquoted
//! version-like number (`12.10`) is a YAML float (`12.1`) by the time the rule is compiled, so
//! `rules lint` reads the text for it.

/// One unquoted number that YAML reads as another value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LossyNumber {
    /// 0-based line offset within the text.
    pub line: usize,
    /// The number as written (`12.10`).
    pub written: String,
    /// What YAML makes of it (`12.1`).
    pub read_as: String,
}

/// Plain (unquoted) scalars written as `D.D` whose value as a float prints differently
/// (`12.10` → `12.1`, `11.0` → `11`, `3.10` → `3.1`): a version that lost a digit. Quoted
/// scalars, comments and block scalars (`>-`, `|`) are skipped; `0.5` (a real fraction) is not
/// reported.
pub fn lossy_numbers(text: &str) -> Vec<LossyNumber> {
    let mut out = Vec::new();
    let mut block: Option<usize> = None;
    for (i, line) in text.lines().enumerate() {
        let indent = line.len() - line.trim_start().len();
        if let Some(b) = block {
            if line.trim().is_empty() || indent > b {
                continue;
            }
            block = None;
        }
        let (tokens, opens_block) = plain_tokens(line);
        if opens_block {
            block = Some(indent);
        }
        for (key, t) in tokens {
            if is_measure(&key) {
                continue;
            }
            if let Some(read_as) = lossy(&t) {
                out.push(LossyNumber {
                    line: i,
                    written: t,
                    read_as,
                });
            }
        }
    }
    out
}

/// Keys that hold measurements, not versions (`memory_used_percent: 22.0` means 22): a fact
/// named with a unit is compared as a number, so its YAML float is what the author meant.
fn is_measure(key: &str) -> bool {
    const UNITS: &[&str] = &[
        "_percent",
        "_mib",
        "_gib",
        "_mb",
        "_gb",
        "_bytes",
        "_seconds",
        "_secs",
        "_ms",
        "_ratio",
        "threshold",
    ];
    UNITS.iter().any(|u| key.ends_with(u))
}

fn lossy(token: &str) -> Option<String> {
    let t = token.strip_prefix('+').unwrap_or(token);
    let digits = t.strip_prefix('-').unwrap_or(t);
    let (a, b) = digits.split_once('.')?;
    if a.is_empty() || b.is_empty() || !(a.bytes().chain(b.bytes()).all(|c| c.is_ascii_digit())) {
        return None;
    }
    let f: f64 = t.parse().ok()?;
    let shown = format!("{f}");
    (shown != t).then_some(shown)
}

/// The plain scalars of one line with the key each one is the value of (flow collections split
/// on `[]{},`, keys split off at `: `), and whether the line opens a block scalar (`key: >-`,
/// `- |`).
fn plain_tokens(line: &str) -> (Vec<(String, String)>, bool) {
    let mut tokens = Vec::new();
    let mut key = String::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut last_value = String::new();
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    let flush =
        |cur: &mut String, key: &str, tokens: &mut Vec<(String, String)>, last: &mut String| {
            let t = cur.trim();
            let t = t.strip_prefix("- ").unwrap_or(t).trim();
            if !t.is_empty() {
                tokens.push((key.to_string(), t.to_string()));
                *last = t.to_string();
            }
            cur.clear();
        };
    while i < chars.len() {
        let c = chars[i];
        match quote {
            Some(q) => {
                if c == '\\' && q == '"' {
                    i += 1;
                } else if c == q {
                    if q == '\'' && chars.get(i + 1) == Some(&'\'') {
                        i += 1;
                    } else {
                        quote = None;
                        last_value = "'quoted'".into();
                    }
                }
            }
            None => match c {
                '"' | '\'' if cur.trim().trim_start_matches("- ").trim().is_empty() => {
                    cur.clear();
                    quote = Some(c);
                }
                '#' if i == 0 || chars[i - 1].is_whitespace() => break,
                '[' | ']' | '{' | '}' | ',' => {
                    flush(&mut cur, &key, &mut tokens, &mut last_value);
                    key.clear();
                }
                ':' if chars.get(i + 1).is_none_or(|n| n.is_whitespace()) => {
                    // A key: not a value.
                    key = cur.trim().trim_start_matches("- ").trim().to_string();
                    cur.clear();
                }
                _ => cur.push(c),
            },
        }
        i += 1;
    }
    flush(&mut cur, &key, &mut tokens, &mut last_value);
    let opens_block = quote.is_none()
        && matches!(
            last_value.as_str(),
            "|" | ">" | "|-" | ">-" | "|+" | ">+" | "- |" | "- >" | "- >-" | "- |-"
        );
    (tokens, opens_block)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(text: &str) -> Vec<(usize, String, String)> {
        lossy_numbers(text)
            .into_iter()
            .map(|l| (l.line, l.written, l.read_as))
            .collect()
    }

    #[test]
    fn finds_versions_that_lose_a_digit() {
        let yaml = "- {fact: t.version, equals: 12.10}\n- {fact: v, in: [3.10, \"3.11\", 11.0]}\n  cuda_version: 12.4\n  ratio: 0.5\n  name: '12.10'\n  other: \"11.0\" # 12.10 in a comment\n";
        assert_eq!(
            written(yaml),
            vec![
                (0, "12.10".into(), "12.1".into()),
                (1, "3.10".into(), "3.1".into()),
                (1, "11.0".into(), "11".into()),
            ]
        );
    }

    #[test]
    fn skips_block_scalars_and_prose() {
        let yaml = "message: >-\n  CUDA\n  12.10\nfix: CUDA 12.10 is needed\nversion: 12.10\n";
        assert_eq!(written(yaml), vec![(4, "12.10".into(), "12.1".into())]);
        assert_eq!(written("- 1.10\n"), vec![(0, "1.10".into(), "1.1".into())]);
        assert!(written("key: [a, b]\n  v: 2.15.0\n  n: 40960\n").is_empty());
    }

    #[test]
    fn measurements_with_a_unit_are_not_versions() {
        let yaml = "live: {memory_used_mib: 9000, memory_used_percent: 22.0, x: 1.10}
";
        assert_eq!(written(yaml), vec![(0, "1.10".into(), "1.1".into())]);
    }
}
