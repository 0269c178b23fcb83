//! Bounded smoke run of every fuzz target (issue 16): each parser is fed its real seed files
//! and mutations of them for `ENVDOCTOR_FUZZ_SECS` seconds (default 0.5 in the quick tier; CI
//! sets 5), and no input may panic. Long campaigns: `bench/fuzz.sh`. Crashers are saved under
//! `target/fuzz-crashes/` for replay (`cargo run --example fuzz -- TARGET`).

#[path = "../fuzz/engine.rs"]
mod engine;
#[path = "../fuzz/targets.rs"]
mod targets;

use std::time::Duration;

#[test]
fn every_parser_survives_its_fuzz_smoke_run() {
    let secs: f64 = std::env::var("ENVDOCTOR_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.5);
    let crashes = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-crashes");
    let budget = engine::Budget {
        time: Some(Duration::from_secs_f64(secs)),
        execs: None,
        hang: Duration::from_secs(20),
    };
    let mut report = Vec::new();
    let mut failed = Vec::new();
    for t in targets::all() {
        let seeds = targets::seeds(t.name);
        assert!(!seeds.is_empty(), "{}: no seed files found", t.name);
        let s = engine::run(&t, &seeds, budget, 0x5eed, &crashes);
        // Every seed ran unmutated, and mutations after them.
        assert!(s.execs as usize > seeds.len().min(16), "{}", s.line());
        report.push(s.line());
        if s.panics > 0 {
            failed.push(format!("{}\n  {}", s.line(), s.findings.join("\n  ")));
        }
    }
    eprintln!("{}", report.join("\n"));
    assert!(failed.is_empty(), "panics:\n{}", failed.join("\n"));
}
