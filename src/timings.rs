//! `--timings`: where the wall time of one `check` or `snapshot` goes.
//!
//! This module owns a process-wide, opt-in record of named spans (each probe, each probe stage,
//! rule compile, rule evaluation, rendering). Nothing is recorded unless [`enable`] was called,
//! so the probes pay one relaxed atomic load when it is off. The report goes to stderr, one line
//! per span, so JSON on stdout stays clean.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static ON: AtomicBool = AtomicBool::new(false);
static SPANS: Mutex<Vec<(String, Duration)>> = Mutex::new(Vec::new());

/// Start recording.
pub fn enable() {
    ON.store(true, Ordering::Relaxed);
}

/// Whether spans are being recorded.
pub fn enabled() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Record that `name` took `took` (no-op when off).
pub fn record(name: impl Into<String>, took: Duration) {
    if !enabled() {
        return;
    }
    if let Ok(mut spans) = SPANS.lock() {
        spans.push((name.into(), took));
    }
}

/// Run `f`, recording its wall time as `name`.
pub fn span<T>(name: &str, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let out = f();
    record(name, start.elapsed());
    out
}

/// The spans recorded so far, in the order they ended.
pub fn spans() -> Vec<(String, Duration)> {
    SPANS.lock().map(|s| s.clone()).unwrap_or_default()
}

/// The report: `timing <name> <ms> ms` per span, then the total since `start`.
pub fn report(start: Instant) -> String {
    let mut s = String::new();
    for (name, took) in spans() {
        s.push_str(&format!(
            "timing {name:<28} {:>9.1} ms\n",
            took.as_secs_f64() * 1e3
        ));
    }
    s.push_str(&format!(
        "timing {:<28} {:>9.1} ms\n",
        "total",
        start.elapsed().as_secs_f64() * 1e3
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_are_recorded_only_when_enabled_and_reported_per_line() {
        // Off: nothing recorded.
        record("before", Duration::from_millis(1));
        assert!(spans().iter().all(|(n, _)| n != "before"));
        enable();
        let v = span("work", || {
            std::thread::sleep(Duration::from_millis(5));
            7
        });
        assert_eq!(v, 7);
        let got = spans();
        let work = got.iter().find(|(n, _)| n == "work").expect("recorded");
        assert!(work.1 >= Duration::from_millis(5));
        let text = report(Instant::now());
        assert!(text.lines().any(|l| l.starts_with("timing work ")));
        assert!(text
            .lines()
            .last()
            .is_some_and(|l| l.starts_with("timing total")));
    }
}
