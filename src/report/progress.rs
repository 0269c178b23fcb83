//! The progress line on stderr: when a probe has run for more than a second and stderr is a
//! terminal, say which one envdoctor is waiting for ("waiting for NVML (2 s of 5)"), on one line
//! that is rewritten in place and cleared when the probes are done.

use std::io::{IsTerminal, Write};
use std::time::Duration;

/// Whether to show progress: stderr is a terminal (and `ENVDOCTOR_NO_PROGRESS` is unset); `cli`
/// then hands [`terminal`] to the probe runner.
pub fn wanted() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("ENVDOCTOR_NO_PROGRESS").is_none()
}

/// Show which probes are still running on the progress line; clear it when none are.
pub fn terminal(probes: &[&str], elapsed: Duration, deadline: Duration) {
    if probes.is_empty() {
        show("");
    } else {
        show(&line(probes, elapsed, deadline));
    }
}

/// What a person calls what a probe is waiting for.
pub fn waiting_for(probe: &str) -> &str {
    match probe {
        "gpu" => "NVML",
        "libs" => "the library loader",
        "python" => "the Python interpreters",
        "checkpoint" => "the checkpoints",
        "cuda" => "the CUDA toolkits",
        other => other,
    }
}

/// `waiting for NVML, the checkpoints (2 s of 5)`.
pub fn line(probes: &[&str], elapsed: Duration, deadline: Duration) -> String {
    let names: Vec<&str> = probes.iter().map(|p| waiting_for(p)).collect();
    format!(
        "waiting for {} ({} s of {})",
        names.join(", "),
        elapsed.as_secs(),
        deadline.as_secs_f64().ceil() as u64
    )
}

/// Show `text` in place of the previous progress line (empty: clear it).
pub fn show(text: &str) {
    let mut err = std::io::stderr().lock();
    // Carriage return and erase-line: the line is rewritten, and nothing is left once cleared.
    // A line stderr refuses (closed) is dropped: progress is a courtesy, the probes go on.
    write!(err, "\r\x1b[2K{text}")
        .and_then(|()| err.flush())
        .ok();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_what_it_waits_for() {
        assert_eq!(
            line(
                &["gpu"],
                Duration::from_millis(2300),
                Duration::from_secs(5)
            ),
            "waiting for NVML (2 s of 5)"
        );
        assert_eq!(
            line(
                &["gpu", "checkpoint"],
                Duration::from_secs(1),
                Duration::from_millis(2500)
            ),
            "waiting for NVML, the checkpoints (1 s of 3)"
        );
    }
}
