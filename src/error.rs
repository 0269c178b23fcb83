//! The one error type of the library: every error says what it concerns and maps to an exit code.

use std::fmt;

/// What went wrong, for a person, with the exit code it maps to.
#[derive(Debug)]
pub struct Error {
    /// What the error is about (a file path, an argument, a rule file), when it is about one thing.
    pub subject: Option<String>,
    /// The message.
    pub message: String,
    /// An optional hint for how to fix it.
    pub hint: Option<String>,
}

impl Error {
    /// Bad input from a named file or argument (exit 2).
    pub fn input(subject: impl Into<String>, message: impl Into<String>) -> Self {
        Error {
            subject: Some(subject.into()),
            message: message.into(),
            hint: None,
        }
    }

    /// Anything else envdoctor could not do (exit 2).
    pub fn other(message: impl Into<String>) -> Self {
        Error {
            subject: None,
            message: message.into(),
            hint: None,
        }
    }

    /// Attach a hint.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// The process exit code: envdoctor could not do its job.
    pub fn exit(&self) -> crate::exit::Exit {
        crate::exit::Exit::Trouble
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.subject {
            Some(s) => write!(f, "{s}: {}", self.message)?,
            None => write!(f, "{}", self.message)?,
        }
        if let Some(h) = &self.hint {
            write!(f, "\n  hint: {h}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}
