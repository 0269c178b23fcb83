//! English counts, one helper for every output: `1 error`, `2 errors`.

/// `n word` with `s` added unless `n` is 1: `plural(2, "shard")` → `2 shards`.
pub fn plural(n: usize, word: &str) -> String {
    format!("{n} {word}{}", s(n))
}

/// The plural ending of a count: `""` for 1, `"s"` otherwise.
pub fn s(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(plural(1, "error"), "1 error");
        assert_eq!(plural(0, "warning"), "0 warnings");
        assert_eq!(plural(2, "shard"), "2 shards");
    }
}
