//! Text layout for a person: the width to wrap at (the terminal's; none when piped), wrapping
//! that never breaks inside a word or a path, and paths written in full once, then shortened
//! (`~/…`, or relative to the project).
//!
//! `ENVDOCTOR_WIDTH=N` forces a width (`0`: never wrap), for tests and for `watch`/`less`.

use std::cell::RefCell;
use std::collections::HashSet;
use std::io::IsTerminal;

/// Where text goes and how wide it may be.
#[derive(Debug, Default)]
pub struct Layout {
    /// Wrap at this many columns; `None`: do not wrap (piped output).
    pub width: Option<usize>,
    /// The home directory (written `~`).
    home: Option<String>,
    /// The project directory (paths under it are written relative to it).
    project: Option<String>,
    /// Paths already written in full.
    seen: RefCell<HashSet<String>>,
}

/// The width of stdout: `ENVDOCTOR_WIDTH`, else the terminal's, else none (piped).
pub fn stdout_width() -> Option<usize> {
    if let Some(w) = std::env::var("ENVDOCTOR_WIDTH")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
    {
        return (w > 0).then_some(w.max(40));
    }
    if !std::io::stdout().is_terminal() {
        return None;
    }
    terminal_size::terminal_size_of(std::io::stdout())
        .map(|(w, _)| usize::from(w.0).max(40))
        .or(Some(80))
}

impl Layout {
    /// A layout of `width`, shortening paths under `home` and `project`.
    pub fn new(width: Option<usize>, home: Option<String>, project: Option<String>) -> Layout {
        let clean = |p: Option<String>| {
            p.filter(|p| p.len() > 1)
                .map(|p| p.trim_end_matches('/').to_string())
        };
        Layout {
            width,
            home: clean(home),
            project: clean(project),
            seen: RefCell::new(HashSet::new()),
        }
    }

    /// `text` wrapped to the width after `first` (the first line's prefix) and `rest` (the
    /// indent of the following lines); one line when not wrapping. Words and paths are never
    /// split: a word longer than the line gets a line of its own.
    pub fn wrap(&self, first: &str, rest: &str, text: &str) -> Vec<String> {
        let Some(width) = self.width else {
            return vec![format!("{first}{text}")];
        };
        let opts = textwrap::Options::new(width)
            .break_words(false)
            .word_separator(textwrap::WordSeparator::AsciiSpace)
            .word_splitter(textwrap::WordSplitter::NoHyphenation)
            .initial_indent(first)
            .subsequent_indent(rest);
        let lines: Vec<String> = textwrap::wrap(text, opts)
            .into_iter()
            .map(|l| l.trim_end().to_string())
            .collect();
        if lines.is_empty() {
            vec![first.trim_end().to_string()]
        } else {
            lines
        }
    }

    /// Each line of `text` wrapped to the width, its continuation lines indented as the line is
    /// (two more after a `- ` bullet); `text` unchanged when not wrapping. For documents written
    /// as lines (`explain`).
    pub fn wrap_lines(&self, text: &str) -> String {
        if self.width.is_none() {
            return text.to_string();
        }
        let mut out = String::new();
        for line in text.lines() {
            let body = line.trim_start();
            let indent = &line[..line.len() - body.len()];
            let rest = if body.starts_with("- ") {
                format!("{indent}  ")
            } else {
                indent.to_string()
            };
            for l in self.wrap(indent, &rest, body) {
                out.push_str(&l);
                out.push('\n');
            }
        }
        out
    }

    /// Markdown `text` wrapped to the width at spaces, where a line break changes nothing that
    /// Markdown renders (a paragraph, a list item, an HTML block's text): headings, table rows
    /// and fenced code are left whole, as they would not survive a break. Unchanged when not
    /// wrapping (piped: the document as it is pasted).
    pub fn wrap_markdown(&self, text: &str) -> String {
        if self.width.is_none() {
            return text.to_string();
        }
        let mut out = String::new();
        let mut fenced = false;
        for line in text.lines() {
            let body = line.trim_start();
            if body.starts_with("```") {
                fenced = !fenced;
            }
            if fenced || body.starts_with("```") || body.starts_with('#') || body.starts_with('|') {
                out.push_str(line);
                out.push('\n');
            } else {
                out.push_str(&self.wrap_lines(line));
            }
        }
        out
    }

    /// The short form of a path: relative to the project (`./runs/x`), or `~/…`.
    pub fn short(&self, path: &str) -> Option<String> {
        if let Some(p) = &self.project {
            if let Some(rest) = path.strip_prefix(p.as_str()) {
                if rest.is_empty() {
                    return Some(".".into());
                }
                if let Some(r) = rest.strip_prefix('/') {
                    return Some(format!("./{r}"));
                }
            }
        }
        if let Some(h) = &self.home {
            if let Some(rest) = path.strip_prefix(h.as_str()) {
                if rest.is_empty() || rest.starts_with('/') {
                    return Some(format!("~{rest}"));
                }
            }
        }
        None
    }

    /// The project directory, when paths are written relative to it.
    pub fn project(&self) -> Option<&str> {
        self.project.as_deref()
    }

    /// A path: in full the first time, shortened afterwards. Paths under the project are short
    /// from the start once the project itself was written in full.
    pub fn path(&self, path: &str) -> String {
        let mut seen = self.seen.borrow_mut();
        let under_named_project = self.project.as_ref().is_some_and(|p| {
            seen.contains(p.as_str()) && path.starts_with(p.as_str()) && path != p.as_str()
        });
        if seen.insert(path.to_string()) && !under_named_project {
            path.to_string()
        } else {
            self.short(path).unwrap_or_else(|| path.to_string())
        }
    }

    /// Every absolute path in `text` (words starting with `/`) written in full the first time
    /// and shortened afterwards. Text inside backticks (commands to paste) is left whole.
    pub fn paths_in(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut in_code = false;
        for (i, part) in text.split('`').enumerate() {
            if i > 0 {
                out.push('`');
                in_code = !in_code;
            }
            if in_code {
                out.push_str(part);
                continue;
            }
            let mut first = true;
            for word in part.split(' ') {
                if !first {
                    out.push(' ');
                }
                first = false;
                // A path starts at a `/` that begins the word or follows an opening
                // bracket, quote or `=` (`pythons[/usr/bin/python3]`, `(/x)`, `PATH=/bin`).
                let start = word.find('/').filter(|&s| {
                    s == 0 || matches!(word.as_bytes()[s - 1], b'(' | b'[' | b'"' | b'\'' | b'=')
                });
                match start {
                    Some(s) => {
                        let body = &word[s..];
                        let cut = body
                            .find([']', ')', ',', ';', '"', '\''])
                            .unwrap_or(body.len());
                        let end = body[..cut].trim_end_matches(['.', ':']).len();
                        let (p, tail) = body.split_at(end);
                        out.push_str(&word[..s]);
                        out.push_str(&self.path(p));
                        out.push_str(tail);
                    }
                    None => out.push_str(word),
                }
            }
        }
        out
    }
}

/// `s` cut in the middle to at most `max` characters (`/very/long…/tail`).
pub fn elide_middle(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max || max < 5 {
        return s.to_string();
    }
    let keep = max - 1;
    let head = keep / 2;
    let tail = keep - head;
    let a: String = s.chars().take(head).collect();
    let b: String = s.chars().skip(n - tail).collect();
    format!("{a}…{b}")
}

/// `s` within `max` characters, eliding inside its directories, never inside the file name it
/// ends with (the name before a `<-` requester, else the last path component): a compare key
/// such as `libraries[VIRTUAL_ENV/lib/…/libcudnn.so.9<-libtorch_cuda.so]` keeps its soname.
/// Without a `/`, or when the name alone is too long, as [`elide_middle`].
pub fn elide_keeping_name(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_string();
    }
    let before_req = s.find("<-").unwrap_or(s.len());
    let (Some(first), Some(last)) = (s[..before_req].find('/'), s[..before_req].rfind('/')) else {
        return elide_middle(s, max);
    };
    if first == last {
        return elide_middle(s, max);
    }
    let head = &s[..=first];
    let tail = &s[last..];
    let fixed = head.chars().count() + 1 + tail.chars().count();
    if fixed > max {
        // The name still fits: keep the end of the text, the name and what precedes it.
        if tail.chars().count() < max {
            let end: String = s.chars().skip(n + 1 - max).collect();
            return format!("…{end}");
        }
        return elide_middle(s, max);
    }
    // As many of the last directories as fit, after `head…`.
    let middle = &s[first + 1..last];
    let room = max - fixed;
    let kept: String = {
        let chars: Vec<char> = middle.chars().collect();
        let take = room.min(chars.len());
        let from = chars.len() - take;
        // Whole directories only: from a `/` in reach, else none.
        match chars[from..].iter().position(|c| *c == '/') {
            _ if from == 0 => chars.iter().collect(),
            Some(p) => chars[from + p..].iter().collect(),
            None => String::new(),
        }
    };
    format!("{head}…{kept}{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elide_keeping_name_keeps_the_soname_of_a_compare_key() {
        let key = "libraries[VIRTUAL_ENV/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9<-libtorch_cuda.so]";
        for max in [40, 50, 60, 80] {
            let e = elide_keeping_name(key, max);
            assert!(e.chars().count() <= max, "{max}: {e}");
            assert!(e.ends_with("/libcudnn.so.9<-libtorch_cuda.so]"), "{e}");
            if max >= 60 {
                assert!(e.starts_with("libraries[VIRTUAL_ENV/…"), "{e}");
            }
        }
        assert_eq!(elide_keeping_name(key, 200), key);
        // No path: the middle goes.
        assert_eq!(elide_keeping_name("abcdefghij", 5), "ab…ij");
    }

    #[test]
    fn wraps_at_spaces_never_inside_a_word_or_path() {
        let l = Layout::new(Some(20), None, None);
        let lines = l.wrap(
            "  ",
            "    ",
            "run torch.load(weights_only=True) on /a/very/long/path/to/model.pt now",
        );
        assert_eq!(
            lines,
            [
                "  run",
                "    torch.load(weights_only=True)",
                "    on",
                "    /a/very/long/path/to/model.pt",
                "    now"
            ]
        );
        let piped = Layout::new(None, None, None);
        assert_eq!(piped.wrap("  ", "    ", "a b c").len(), 1);
    }

    #[test]
    fn paths_are_full_once_then_short_but_not_in_commands() {
        let l = Layout::new(None, Some("/home/u".into()), Some("/home/u/proj".into()));
        assert_eq!(
            l.paths_in("at /home/u/proj/runs/a.pt."),
            "at /home/u/proj/runs/a.pt."
        );
        assert_eq!(l.paths_in("(/home/u/proj/runs/a.pt)"), "(./runs/a.pt)");
        assert_eq!(l.paths_in("/home/u/x, /home/u/x"), "/home/u/x, ~/x");
        assert_eq!(
            l.paths_in("`/home/u/x -m pip` and /usr/lib"),
            "`/home/u/x -m pip` and /usr/lib"
        );
        assert_eq!(l.paths_in("and/or"), "and/or");
        assert_eq!(
            l.paths_in("pythons[/home/u/x].packages[a] /home/u/proj/b"),
            "pythons[~/x].packages[a] /home/u/proj/b"
        );
        assert_eq!(
            l.paths_in("the `x -m pip install 'a<4'` and (/home/u/x):"),
            "the `x -m pip install 'a<4'` and (~/x):"
        );
    }

    #[test]
    fn elides_in_the_middle() {
        assert_eq!(elide_middle("abcdefghij", 7), "abc…hij");
        assert_eq!(elide_middle("abc", 7), "abc");
    }
}
