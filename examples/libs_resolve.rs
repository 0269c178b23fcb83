//! Benchmark driver for `bench/libs_resolve.sh`: resolve a list of sonames for several
//! requesters the way `ld.so` would (no library is loaded), with symlink facts, ELF facts of the
//! winner and every other copy on the machine, and print timings and the answers.
//!
//! Usage: `libs_resolve ROUNDS SONAMES_FILE REQUESTER...` (machine = this host; LD_LIBRARY_PATH
//! from the environment). Prints `resolve <requester> <soname> <path|-> <found_via>` once, then
//! `timing cold_ms=.. median_ms=.. min_ms=.. resolutions=..`.

#![allow(clippy::too_many_lines)] // the 80-line limit is for src/; examples are tools

use envdoctor::probe::libs::{elf, links, search};
use envdoctor::root::{Env, Root};
use std::path::{Path, PathBuf};
use std::time::Instant;

fn one_pass(root: &Root, env: &Env, sonames: &[String], reqs: &[PathBuf], print: bool) -> usize {
    let loader = search::Loader::new(root, env);
    let exe = search::Object::bare("/usr/bin/python3").main_executable();
    let mut n = 0;
    for r in reqs {
        let obj = match search::Object::read(root, r) {
            Ok(o) => o,
            Err(e) => {
                eprintln!("{e}");
                continue;
            }
        };
        let req = search::Requester::new(obj).loaded_by(exe.clone());
        for s in sonames {
            let res = loader.resolve(s, &req);
            if let Some(p) = &res.path {
                let facts = links::describe(root, p);
                if let Some(real) = &facts.realpath {
                    let _ = elf::read(root, real);
                }
            }
            let _ = loader.all_candidates(s, &[]);
            n += 1;
            if print {
                println!(
                    "resolve {} {} {} {}",
                    r.display(),
                    s,
                    res.path
                        .as_ref()
                        .map(|p| p.display().to_string())
                        .unwrap_or_else(|| "-".into()),
                    res.label().unwrap_or("-")
                );
            }
        }
    }
    n
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: libs_resolve ROUNDS SONAMES_FILE REQUESTER...");
        std::process::exit(2);
    }
    let rounds: usize = args[1].parse().unwrap_or(20);
    let sonames: Vec<String> = std::fs::read_to_string(&args[2])
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect();
    let reqs: Vec<PathBuf> = args[3..].iter().map(PathBuf::from).collect();
    let root = Root::new(Path::new("/"));
    let env = Env::from_process();
    let t = Instant::now();
    let n = one_pass(&root, &env, &sonames, &reqs, true);
    let cold = t.elapsed().as_secs_f64() * 1000.0;
    let mut times: Vec<f64> = (0..rounds)
        .map(|_| {
            let t = Instant::now();
            one_pass(&root, &env, &sonames, &reqs, false);
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    times.sort_by(|a, b| a.total_cmp(b));
    let median = times.get(times.len() / 2).copied().unwrap_or(cold);
    let min = times.first().copied().unwrap_or(cold);
    println!("timing cold_ms={cold:.2} median_ms={median:.2} min_ms={min:.2} resolutions={n}");
}
