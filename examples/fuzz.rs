//! The fuzz runner for long campaigns (see `bench/fuzz.sh` and `fuzz/engine.rs`).
//!
//! `cargo run --release --example fuzz -- [TARGET...] [--secs N] [--execs N] [--seed N]
//! [--crashes DIR] [--list] [--replay FILE]`: each target in turn (all by default), one line of figures each
//! (execs, panics, exec/s, slowest input); exit 1 when any input panicked.

#![allow(clippy::too_many_lines)] // the 80-line limit is for src/; fuzz/ is a tool

#[path = "../fuzz/engine.rs"]
mod engine;
#[path = "../fuzz/targets.rs"]
mod targets;

use std::time::Duration;

fn main() {
    let mut names = Vec::new();
    let mut secs: Option<f64> = None;
    let mut execs: Option<u64> = None;
    let mut seed = 0x5eed_u64;
    let mut crashes = std::path::PathBuf::from("target/fuzz-crashes");
    let mut replay: Vec<std::path::PathBuf> = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_default();
        match a.as_str() {
            "--secs" => secs = value().parse().ok(),
            "--execs" => execs = value().parse().ok(),
            "--seed" => seed = value().parse().unwrap_or(seed),
            "--crashes" => crashes = value().into(),
            "--replay" => replay.push(value().into()),
            "--list" => {
                for t in targets::all() {
                    println!("{:<18} {}", t.name, t.parser);
                }
                return;
            }
            _ => names.push(a),
        }
    }
    if !replay.is_empty() {
        // Run saved inputs once each on the named targets (a crasher, a slowest input).
        let mut scratch = engine::Scratch::new();
        for t in targets::all() {
            if !names.iter().any(|n| n == t.name) {
                continue;
            }
            for f in &replay {
                let data = std::fs::read(f).unwrap_or_default();
                let t0 = std::time::Instant::now();
                (t.run)(&mut scratch, &data);
                println!(
                    "{} {}: {:.3} ms",
                    t.name,
                    f.display(),
                    t0.elapsed().as_secs_f64() * 1e3
                );
            }
        }
        return;
    }
    if secs.is_none() && execs.is_none() {
        secs = Some(10.0);
    }
    let budget = engine::Budget {
        time: secs.map(Duration::from_secs_f64),
        execs,
        hang: Duration::from_secs(10),
    };
    let mut panics = 0;
    for t in targets::all() {
        if !names.is_empty() && !names.iter().any(|n| n == t.name) {
            continue;
        }
        let seeds = targets::seeds(t.name);
        let s = engine::run(&t, &seeds, budget, seed, &crashes);
        println!("{}", s.line());
        for f in &s.findings {
            println!("  panic: {f}");
        }
        panics += s.panics;
    }
    std::process::exit(if panics > 0 { 1 } else { 0 });
}
