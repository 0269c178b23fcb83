//! Benchmark driver for `bench/libs_load.sh`: load every library named on the command line in
//! one load child (the libs probe's `load::load_all`), ROUNDS times, and print the timings.
//! Usage: libs_load ENVDOCTOR ROUNDS FAMILY=PATH...

#![allow(clippy::too_many_lines)] // the 80-line limit is for src/; examples are tools
use envdoctor::probe::libs::load::{load_all, Item};
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(exe), Some(rounds)) = (
        args.first(),
        args.get(1).and_then(|r| r.parse::<usize>().ok()),
    ) else {
        eprintln!("usage: libs_load ENVDOCTOR ROUNDS FAMILY=PATH...");
        std::process::exit(2);
    };
    let items: Vec<Item> = args[2..]
        .iter()
        .filter_map(|a| a.split_once('='))
        .map(|(f, p)| Item {
            family: (f != "-").then(|| f.to_string()),
            path: PathBuf::from(p),
        })
        .collect();
    let env: Vec<_> = std::env::vars_os().collect();
    let mut times = Vec::new();
    let mut versions = 0;
    for _ in 0..rounds {
        let t = Instant::now();
        let r = load_all(
            std::path::Path::new(exe),
            &env,
            &items,
            Duration::from_secs(5),
            Instant::now() + Duration::from_secs(30),
        );
        times.push(t.elapsed());
        versions = r.iter().filter(|r| r.version.is_some()).count();
        if let Some(bad) = r.iter().find(|r| r.status != "loaded") {
            eprintln!("not loaded: {bad:?}");
            std::process::exit(1);
        }
    }
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "timing load_all libs={} versions={} median_ms={:.1} min_ms={:.1}",
        items.len(),
        versions,
        ms(times[times.len() / 2]),
        ms(times[0])
    );
}
