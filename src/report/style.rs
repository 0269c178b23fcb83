//! When to colour, and the few styles envdoctor uses.
//!
//! Colour is used only when the stream is a terminal and `NO_COLOR` is unset or empty
//! (<https://no-color.org>); `CLICOLOR_FORCE=1` forces it (useful for `less -R`).

use owo_colors::OwoColorize;
use std::io::IsTerminal;

/// Whether to colour stdout.
pub fn stdout_color() -> bool {
    decide(
        std::io::stdout().is_terminal(),
        std::env::var_os("NO_COLOR").as_deref(),
        std::env::var_os("CLICOLOR_FORCE").as_deref(),
    )
}

/// The decision, from its inputs (tested below).
pub fn decide(
    is_terminal: bool,
    no_color: Option<&std::ffi::OsStr>,
    force: Option<&std::ffi::OsStr>,
) -> bool {
    if no_color.is_some_and(|v| !v.is_empty()) {
        return false;
    }
    if force.is_some_and(|v| !v.is_empty() && v != "0") {
        return true;
    }
    is_terminal
}

/// A small palette that is a no-op when colour is off.
#[derive(Clone, Copy, Debug)]
pub struct Style {
    /// Colour on?
    pub color: bool,
}

impl Style {
    /// Red bold (errors).
    pub fn error(&self, s: &str) -> String {
        if self.color {
            s.red().bold().to_string()
        } else {
            s.to_string()
        }
    }
    /// Yellow bold (warnings).
    pub fn warning(&self, s: &str) -> String {
        if self.color {
            s.yellow().bold().to_string()
        } else {
            s.to_string()
        }
    }
    /// Cyan (info).
    pub fn info(&self, s: &str) -> String {
        if self.color {
            s.cyan().to_string()
        } else {
            s.to_string()
        }
    }
    /// Green (all good).
    pub fn good(&self, s: &str) -> String {
        if self.color {
            s.green().to_string()
        } else {
            s.to_string()
        }
    }
    /// Bold.
    pub fn bold(&self, s: &str) -> String {
        if self.color {
            s.bold().to_string()
        } else {
            s.to_string()
        }
    }
    /// Dimmed (evidence, paths).
    pub fn dim(&self, s: &str) -> String {
        if self.color {
            s.dimmed().to_string()
        } else {
            s.to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn no_color_wins_and_pipes_are_plain() {
        assert!(decide(true, None, None));
        assert!(!decide(false, None, None));
        assert!(!decide(true, Some(OsStr::new("1")), None));
        assert!(!decide(true, Some(OsStr::new("1")), Some(OsStr::new("1"))));
        assert!(decide(true, Some(OsStr::new("")), None));
        assert!(decide(false, None, Some(OsStr::new("1"))));
        assert!(!decide(false, None, Some(OsStr::new("0"))));
        let plain = Style { color: false };
        assert_eq!(plain.error("x"), "x");
        let coloured = Style { color: true };
        assert!(coloured.error("x").contains("\u{1b}["));
    }
}
