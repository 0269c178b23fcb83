//! One escaping layer per output kind, for the strings that come from the machine or the
//! project (paths, kernelspec names, file names, settings values, snapshot fields), which an
//! adversary can choose:
//!
//! - [`one_line`]: any human output. Control characters (C0 with newlines and carriage
//!   returns, DEL, C1) and bidirectional overrides become visible escapes (`\n`, `\x1b`,
//!   `\u{202e}`), so a value stays on its line and cannot move the cursor, set the window
//!   title, ring the bell or start a line with a GitHub workflow command (`::error::`).
//! - [`terminal`]: a whole text output, as a last guard: every control character but newline
//!   and tab is made visible; envdoctor's own colour sequences (SGR) are kept when colour is on.
//! - [`md_text`], [`md_code`], [`md_fence`], [`html`]: Markdown (pull-request comments): no
//!   HTML, comment (`<!--`), emphasis, link, table break, @mention or new block can come from
//!   a value.
//! - [`gh_data`], [`gh_property`]: GitHub workflow command data and properties.
//! - [`uri_path`]: percent-encoding for SARIF URIs beyond what `url` does (`[`, `]`, `|`).

use std::borrow::Cow;
use std::fmt::{self, Write};

fn is_bidi(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}')
}

fn needs_escape(c: char) -> bool {
    (c.is_control() && c != '\t') || is_bidi(c)
}

fn push_visible(out: &mut String, c: char) -> fmt::Result {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        c if (c as u32) < 0x100 => write!(out, "\\x{:02x}", c as u32)?,
        c => write!(out, "\\u{{{:x}}}", c as u32)?,
    }
    Ok(())
}

/// `s` on one line with every control character and bidi override visible.
pub fn one_line(s: &str) -> Cow<'_, str> {
    if !s.chars().any(needs_escape) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(super::written(|out| {
        for c in s.chars() {
            if needs_escape(c) {
                push_visible(out, c)?;
            } else {
                out.push(c);
            }
        }
        Ok(())
    }))
}

/// A whole text output made safe for a terminal or a CI log: newlines and tabs stay, and with
/// `keep_sgr` so do colour sequences (`ESC [ digits ; … m`); every other control character is
/// made visible.
pub fn terminal(s: &str, keep_sgr: bool) -> Cow<'_, str> {
    let bad = |c: char| c != '\n' && needs_escape(c);
    if !s.chars().any(bad) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(super::written(|out| {
        let mut rest = s;
        while let Some(c) = rest.chars().next() {
            if c == '\x1b' && keep_sgr {
                if let Some(n) = sgr_len(rest) {
                    out.push_str(&rest[..n]);
                    rest = &rest[n..];
                    continue;
                }
            }
            if bad(c) {
                push_visible(out, c)?;
            } else {
                out.push(c);
            }
            rest = &rest[c.len_utf8()..];
        }
        Ok(())
    }))
}

/// The length of the SGR sequence at the start of `s` (`ESC [ 0-9; m`), if there is one.
fn sgr_len(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    if b.get(1) != Some(&b'[') {
        return None;
    }
    let body = b[2..]
        .iter()
        .take_while(|x| x.is_ascii_digit() || **x == b';')
        .count();
    (b.get(2 + body) == Some(&b'm')).then_some(3 + body)
}

/// Inline Markdown text: one line, and nothing in it can open HTML (`<`, `<!--`), code,
/// emphasis, strikethrough, math, a link or image, an entity, a mention or (where the text
/// starts a line) a heading, list, quote or table. Ordinary text is left as it reads: a `_`
/// between letters or digits (`CUDA_VISIBLE_DEVICES`, `libcudnn_ops.so.9`) is no emphasis,
/// `]`, `(`, `)`, `+`, `=`, `"`, `!`, `.` and `:` open nothing once `[`, `<` and `` ` `` are
/// escaped, a `~` that starts a word before `/` (`~/.cache`) can open but never close a
/// strikethrough, and `&` only escapes where an entity could follow. Only an `@` before a
/// name gets a zero-width space (`@octocat`, `n@octocat` mention no one; `pkg @ file:` stays
/// as it is).
pub fn md_text(s: &str) -> String {
    let s = one_line(s);
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len() + 8);
    let word = |c: Option<&char>| c.is_some_and(|c| c.is_alphanumeric());
    let space = |c: Option<&char>| c.is_none_or(|c| c.is_whitespace());
    for (i, &c) in chars.iter().enumerate() {
        let prev = i.checked_sub(1).and_then(|j| chars.get(j));
        let next = chars.get(i + 1);
        let escape = match c {
            '\\' | '`' | '*' | '[' | '<' | '|' | '$' | '#' => true,
            '_' => !(word(prev) && word(next)),
            '~' => !(space(prev) && next == Some(&'/')),
            '&' => next.is_some_and(|n| n.is_ascii_alphanumeric() || *n == '#'),
            // At the start: a quote, a list item, a setext underline.
            '>' | '-' | '+' | '=' => i == 0,
            _ => false,
        };
        if escape {
            out.push('\\');
        }
        out.push(c);
        if c == '@' && next.is_some_and(|n| n.is_ascii_alphanumeric()) {
            out.push('\u{200b}');
        }
    }
    // `1.` or `1)` then a space (or nothing) would start an ordered list.
    let digits = chars.iter().take_while(|c| c.is_ascii_digit()).count();
    if (1..=9).contains(&digits)
        && matches!(chars.get(digits), Some('.' | ')'))
        && space(chars.get(digits + 1))
    {
        out.insert(digits, '\\');
    }
    out
}

/// The Markdown of a rule's message or fix template whose literal text is the rule author's
/// Markdown (their `code` spans stay code) and whose holes are facts: outside a code span a
/// fact goes through [`md_text`]; inside one, where nothing is interpreted, it cannot close
/// the span (a backtick becomes `'`). `|` is escaped everywhere (the message is a table cell
/// too) and the literal text cannot open HTML either.
pub fn md_template(parts: &[(bool, &str)]) -> String {
    let mut out = String::new();
    let mut in_code = false;
    for (literal, s) in parts {
        let s = one_line(s);
        if *literal {
            for c in s.chars() {
                match c {
                    '`' => in_code = !in_code,
                    '|' => out.push('\\'),
                    '<' if !in_code => out.push('\\'),
                    _ => {}
                }
                out.push(c);
            }
        } else if in_code {
            out.push_str(&s.replace('`', "'").replace('|', "\\|"));
        } else {
            out.push_str(&md_text(&s));
        }
    }
    out
}

/// A Markdown code span holding `s` on one line: fenced with more backticks than any run in
/// `s`, padded with spaces when `s` starts or ends with a backtick. Nothing inside is
/// interpreted (no HTML, no mention); `|` is escaped for table cells (GitHub unescapes it).
pub fn md_code(s: &str) -> String {
    let s = one_line(s).replace('|', "\\|");
    let fence = "`".repeat(longest_run(&s, '`') + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') || s.is_empty() {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{s}{pad}{fence}")
}

/// The fence for a fenced code block holding `s` (more backticks than any run in `s`, at
/// least three).
pub fn md_fence(s: &str) -> String {
    "`".repeat((longest_run(s, '`') + 1).max(3))
}

fn longest_run(s: &str, c: char) -> usize {
    let (mut best, mut cur) = (0, 0);
    for x in s.chars() {
        cur = if x == c { cur + 1 } else { 0 };
        best = best.max(cur);
    }
    best
}

/// Text inside HTML (`<summary>`, `<code>`): one line, `& < > " '` as entities, `@` as in
/// [`md_text`].
pub fn html(s: &str) -> String {
    let s = one_line(s);
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '@' => out.push_str("@\u{200b}"),
            c => out.push(c),
        }
    }
    out
}

/// A GitHub workflow command's data: `%`, CR and LF as the runner unescapes them, and the
/// other control characters made visible.
pub fn gh_data(s: &str) -> String {
    let s = s
        .replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A");
    one_line(&s).into_owned()
}

/// A GitHub workflow command's property value: as [`gh_data`], and `:` and `,`.
pub fn gh_property(s: &str) -> String {
    gh_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// A URI (as `url` writes it) with `[`, `]` and `|` percent-encoded too, as SARIF consumers
/// that validate RFC 3986 strictly want.
pub fn uri_path(s: &str) -> String {
    s.replace('[', "%5B")
        .replace(']', "%5D")
        .replace('|', "%7C")
}

/// `value` with [`one_line`] applied to every string in it (keys included), for a report
/// rendered for people from a structure that is also printed as JSON (`compare`).
pub fn one_line_all<T: serde::Serialize + serde::de::DeserializeOwned + Clone>(value: &T) -> T {
    fn walk(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::String(s) => {
                if let Cow::Owned(o) = one_line(s) {
                    *s = o;
                }
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(walk),
            serde_json::Value::Object(o) => {
                let old = std::mem::take(o);
                for (k, mut x) in old {
                    walk(&mut x);
                    o.insert(one_line(&k).into_owned(), x);
                }
            }
            _ => {}
        }
    }
    let Ok(mut v) = serde_json::to_value(value) else {
        return value.clone();
    };
    walk(&mut v);
    serde_json::from_value(v).unwrap_or_else(|_| value.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_makes_controls_visible() {
        assert_eq!(one_line("plain /a b"), "plain /a b");
        assert_eq!(
            one_line("a\nb\r\x1b]0;t\x07\u{85}\u{202e}\x7f"),
            "a\\nb\\r\\x1b]0;t\\x07\\x85\\u{202e}\\x7f"
        );
    }

    #[test]
    fn terminal_keeps_our_colours_and_lines_only() {
        let s = "\x1b[1;31mFAIL\x1b[0m x\x1b[2J\x07\n";
        assert_eq!(terminal(s, true), "\x1b[1;31mFAIL\x1b[0m x\\x1b[2J\\x07\n");
        assert_eq!(
            terminal(s, false),
            "\\x1b[1;31mFAIL\\x1b[0m x\\x1b[2J\\x07\n"
        );
    }

    #[test]
    fn markdown_pieces() {
        assert_eq!(
            md_text("a <!-- b @x `c` |"),
            "a \\<!-- b @\u{200b}x \\`c\\` \\|"
        );
        assert_eq!(md_text("- x"), "\\- x");
        assert_eq!(md_text("1. x"), "1\\. x");
        assert_eq!(md_text("12) x"), "12\\) x");
        // Ordinary text reads as it is.
        for plain in [
            "/home/ana/proj/.venv/bin/python 3.11.9 (VIRTUAL_ENV is set)",
            "2.5.1+cu124",
            "libcudnn_ops.so.9 in ~/.cache/x (CUDA_VISIBLE_DEVICES=0,1)",
            "GPU 0: 91.4% used; torch==2.6.0; pkg @ file:///w/x.whl",
            "12.4.127",
        ] {
            assert_eq!(md_text(plain), plain);
        }
        assert_eq!(
            md_text("_a_ *b* ~~c~~ x~/"),
            "\\_a\\_ \\*b\\* \\~\\~c\\~\\~ x\\~/"
        );
        assert_eq!(md_text("&amp; & $x$ #1"), "\\&amp; & \\$x\\$ \\#1");
        assert_eq!(
            md_template(&[
                (true, "run `"),
                (false, "/p`y <b>"),
                (true, " -m pip` for <x> "),
                (false, "_a_ <b>")
            ]),
            "run `/p'y <b> -m pip` for \\<x> \\_a\\_ \\<b>"
        );
        assert_eq!(md_code("a`b"), "``a`b``");
        assert_eq!(md_code("`a"), "`` `a ``");
        assert_eq!(md_fence("x ```` y"), "`````");
        assert_eq!(html("<b a='1'>\n"), "&lt;b a=&#39;1&#39;&gt;\\n");
    }

    #[test]
    fn github_and_uris() {
        assert_eq!(gh_data("a\n::error::x\x1b"), "a%0A::error::x\\x1b");
        assert_eq!(gh_property("a:b,c"), "a%3Ab%2Cc");
        assert_eq!(uri_path("file:///a[1]|b"), "file:///a%5B1%5D%7Cb");
    }
}
