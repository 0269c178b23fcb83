//! `.pth` files as `site.py` reads them: which lines are directories to append to `sys.path`.
//!
//! `site.addpackage` skips comment (`#`) and blank lines, *executes* lines that start with
//! `import ` or `import<TAB>` (envdoctor never does: they are skipped) and treats every other line,
//! right-stripped, as a path relative to the site directory. The caller decides whether the
//! directory exists and is new, as `site.py` does.

use std::path::{Path, PathBuf};

/// What one `.pth` line means.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Line {
    /// A directory to add (already joined to the site directory and normalised).
    Path(PathBuf),
    /// An `import` line: Python would execute it; envdoctor does not.
    Import,
}

/// The meaningful lines of a `.pth` file in `site_dir`, in file order.
pub fn parse(site_dir: &Path, text: &str) -> Vec<Line> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut out = Vec::new();
    for line in text.split('\n') {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        if line.starts_with("import ") || line.starts_with("import\t") {
            out.push(Line::Import);
            continue;
        }
        let line = line.trim_end();
        out.push(Line::Path(crate::root::lexical_normalize(
            &site_dir.join(line),
        )));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_joined_imports_skipped() {
        let site = Path::new("/v/lib/python3.11/site-packages");
        let lines = parse(
            site,
            "# comment\n\n/src/proj  \r\n../extra\nimport sys; sys.path.insert(0, '/evil')\nimport\tos\nimportant\n",
        );
        assert_eq!(
            lines,
            vec![
                Line::Path(PathBuf::from("/src/proj")),
                Line::Path(PathBuf::from("/v/lib/python3.11/extra")),
                Line::Import,
                Line::Import,
                Line::Path(PathBuf::from("/v/lib/python3.11/site-packages/important")),
            ]
        );
    }
}
