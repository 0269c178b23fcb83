//! When to colour, and the few styles envdoctor uses.
//!
//! `--color always|never` decides outright. `--color auto` (the default) colours a terminal
//! unless the environment says otherwise, as decided by `anstream` (`NO_COLOR`, `CLICOLOR=0`,
//! `CLICOLOR_FORCE`, `TERM=dumb`), plus `FORCE_COLOR` (<https://force-color.org>, which anstream
//! does not read): set and not `0`, it colours a pipe too, unless `NO_COLOR` is set. The styles
//! are `anstyle` values rendered as ANSI escapes only when colour is on.

use anstyle::{AnsiColor, Effects, Style as Ansi};
use std::sync::atomic::{AtomicU8, Ordering};

/// `--color`: when to colour the output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorWhen {
    /// On a terminal, unless NO_COLOR, CLICOLOR=0 or TERM=dumb; FORCE_COLOR or CLICOLOR_FORCE
    /// colour pipes too.
    #[default]
    Auto,
    /// Always (e.g. for `less -R`).
    Always,
    /// Never.
    Never,
}

/// The process-wide choice, set once by the command line (0 auto, 1 always, 2 never).
static CHOICE: AtomicU8 = AtomicU8::new(0);

/// Record `--color` for every later [`stdout_color`].
pub fn set_color_when(when: ColorWhen) {
    let v = match when {
        ColorWhen::Auto => 0,
        ColorWhen::Always => 1,
        ColorWhen::Never => 2,
    };
    CHOICE.store(v, Ordering::Relaxed);
    // clap's own help and errors follow the same choice.
    anstream::ColorChoice::write_global(match when {
        ColorWhen::Auto => anstream::ColorChoice::Auto,
        ColorWhen::Always => anstream::ColorChoice::Always,
        ColorWhen::Never => anstream::ColorChoice::Never,
    });
}

/// The recorded `--color`.
pub fn color_when() -> ColorWhen {
    match CHOICE.load(Ordering::Relaxed) {
        1 => ColorWhen::Always,
        2 => ColorWhen::Never,
        _ => ColorWhen::Auto,
    }
}

/// Whether to colour stdout, under the recorded `--color` and the environment.
pub fn stdout_color() -> bool {
    match color_when() {
        ColorWhen::Always => true,
        ColorWhen::Never => false,
        ColorWhen::Auto => {
            if force_color() {
                return true;
            }
            // anstream's verdict for this stream under the environment; the global choice is
            // `Auto` here, so this is the environment's and the terminal's decision.
            anstream::AutoStream::choice(&std::io::stdout()) != anstream::ColorChoice::Never
        }
    }
}

/// `FORCE_COLOR` set to something other than empty or `0`, and `NO_COLOR` not set.
fn force_color() -> bool {
    let set = std::env::var_os("FORCE_COLOR").is_some_and(|v| !v.is_empty() && v != "0");
    set && !anstyle_query::no_color()
}

/// A small palette that is a no-op when colour is off.
#[derive(Clone, Copy, Debug)]
pub struct Style {
    /// Colour on?
    pub color: bool,
}

impl Style {
    /// The palette for stdout under the current choice.
    pub fn stdout() -> Style {
        Style {
            color: stdout_color(),
        }
    }

    fn paint(&self, style: Ansi, s: &str) -> String {
        if self.color {
            format!("{}{s}{}", style.render(), style.render_reset())
        } else {
            s.to_string()
        }
    }

    /// Red bold (errors).
    pub fn error(&self, s: &str) -> String {
        self.paint(AnsiColor::Red.on_default().effects(Effects::BOLD), s)
    }
    /// Yellow bold (warnings).
    pub fn warning(&self, s: &str) -> String {
        self.paint(AnsiColor::Yellow.on_default().effects(Effects::BOLD), s)
    }
    /// Cyan (info).
    pub fn info(&self, s: &str) -> String {
        self.paint(AnsiColor::Cyan.on_default(), s)
    }
    /// Green (all good).
    pub fn good(&self, s: &str) -> String {
        self.paint(AnsiColor::Green.on_default(), s)
    }
    /// Bold.
    pub fn bold(&self, s: &str) -> String {
        self.paint(Ansi::new().effects(Effects::BOLD), s)
    }
    /// Dimmed (evidence, paths).
    pub fn dim(&self, s: &str) -> String {
        self.paint(Ansi::new().effects(Effects::DIMMED), s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_is_plain_and_colour_is_ansi() {
        let plain = Style { color: false };
        assert_eq!(plain.error("x"), "x");
        let coloured = Style { color: true };
        assert_eq!(coloured.error("x"), "\u{1b}[1m\u{1b}[31mx\u{1b}[0m");
        assert_eq!(coloured.dim("x"), "\u{1b}[2mx\u{1b}[0m");
    }
}
