//! The reality matrix (issue 24): envdoctor's verdict checked against what the real import does.
//!
//! Real venvs from PyPI (torch 2.15, torch 2.6 cu124, tensorflow[and-cuda] 2.21,
//! jax[cuda13] 0.10.2, and the CPU-only jax 0.10.2) crossed with the perturbations of
//! `tests/reality/perturbations.yaml` (each from a public report: older real CUDA libraries
//! from older `nvidia-*` wheels on LD_LIBRARY_PATH, in LD_PRELOAD, on PYTHONPATH, in the working
//! directory, in the user site, in an ld.so.conf directory; missing, downgraded and doubled
//! wheels; a toolkit on PATH; variables), crossed with {no driver, a GPU box (the fake NVML and
//! a `libcuda.so.1` stand-in)} and {`--expect-gpu` or not}.
//!
//! For each cell a child interpreter imports the framework and runs a first operation
//! (`torch.zeros(1)`, `tf.constant(1)`, `jnp.ones(1)`): it works or breaks, with its stderr.
//! That outcome is cached by a hash of its inputs under `~/.cache/envdoctor-pypi/reality/`, so a
//! warm run redoes only what changed. Then `envdoctor check` runs on the same cell and must agree:
//! - the import breaks ⇔ an error finding names the cause (a rule of the cell's `cause`, naming
//!   its library);
//! - the import works ⇒ no error, and a warning only for what the table says breaks later (GPU
//!   use, profiling, a lazily loaded library);
//! - where no GPU can be used (no driver, or a CPU-only build), `--expect-gpu` adds exactly one
//!   error saying so, and without it a clean install is quiet.
//!
//! The agreement table goes to `target/reality-matrix.md` (and `$ENVDOCTOR_REALITY_TABLE` when
//! set), printed too. Each fix command of the form `pip install …` that a cell's findings print is
//! tried with `pip install --dry-run` in a hard-linked copy of the cell's venv: it must resolve
//! (an unreachable index or pip's timeout is only reported). With `ENVDOCTOR_REALITY_WRITE_CORPUS=1` each breaking cell's real stderr is saved
//! with its cause as a `diagnose` corpus file under `fixtures/logs/reality/`.
//!
//! A disagreement fails the test unless `known_disagreements` in the table explains it, with
//! evidence (the simulated GPU box cannot show what a real GPU would); an explanation that no
//! cell needs any more fails it too.
//!
//! Runs with `ENVDOCTOR_REALITY=1` (every cell) or `ENVDOCTOR_REALITY=ci` (the perturbations
//! marked `ci: true`: what `.ci/run` runs) in the PyPI tier (`ENVDOCTOR_PYPI=1` or
//! `ENVDOCTOR_REQUIRE_PYPI=1`); skipped with a message otherwise. Imports run two at a time.
//! `ENVDOCTOR_REALITY_ONLY=a,b` keeps the cells whose name contains any of the parts
//! (development; the frameworks of the other cells are then not even built).

use crate::common::reality::{self, Cell, CheckRun, Machine, Matrix, Outcome, Verdict};
use crate::common::{cc, machine::repo, pypi};
use crate::fake_nvml;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// One (framework, perturbation, machine) after running: the real outcome and both checks.
struct Ran {
    cell: Cell,
    outcome: Outcome,
    /// (expect_gpu, check run, verdict)
    checks: Vec<(bool, CheckRun, Verdict)>,
}

fn selected(p: &reality::Perturbation, name: &str) -> bool {
    if std::env::var("ENVDOCTOR_REALITY").is_ok_and(|v| v == "ci") && !p.ci {
        return false;
    }
    match std::env::var("ENVDOCTOR_REALITY_ONLY") {
        Ok(only) if !only.is_empty() => only.split(',').any(|part| name.contains(part)),
        _ => true,
    }
}

/// The table itself is sound: unique ids, known frameworks and places' fields, a report each,
/// at least 25 perturbations besides `clean`.
fn validate(m: &Matrix) {
    let fws: BTreeSet<&str> = m.frameworks.iter().map(|f| f.id.as_str()).collect();
    let mut ids = BTreeSet::new();
    for p in &m.perturbations {
        assert!(ids.insert(&p.id), "duplicate perturbation {}", p.id);
        assert!(
            p.report.starts_with("https://github.com/"),
            "{}: cite a public report",
            p.id
        );
        assert!(!p.frameworks.is_empty(), "{}: no frameworks", p.id);
        for f in &p.frameworks {
            assert!(fws.contains(f.as_str()), "{}: unknown framework {f}", p.id);
        }
        for l in &p.later {
            assert!(
                !l.why.is_empty(),
                "{}: say what breaks later for {}",
                p.id,
                l.rule
            );
        }
        use reality::Place::*;
        let ok = match p.place {
            LdLibraryPath | LdSoConf | Path => !p.dirs.is_empty() && !p.wheels.is_empty(),
            LdPreload => !p.files.is_empty() && !p.wheels.is_empty(),
            Pythonpath | Cwd | UserSite => !p.wheels.is_empty(),
            Venv => !p.uninstall.is_empty() || !p.install.is_empty(),
            Env => true,
        };
        assert!(ok, "{}: {:?} lacks what it places", p.id, p.place);
        for r in p.install.iter() {
            assert!(
                p.wheels.contains(r),
                "{}: install {r} is not among its wheels",
                p.id
            );
        }
    }
    assert!(
        m.perturbations.len() > 25,
        "{} perturbations",
        m.perturbations.len()
    );
    for k in &m.known_disagreements {
        assert!(
            !k.why.is_empty() && !k.evidence.is_empty(),
            "{:?}: say why, with evidence",
            k.cells
        );
        for c in &k.cells {
            let mut parts = c.split('/');
            let (f, p) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            assert!(
                fws.contains(f) && ids.contains(&p.to_string()),
                "known_disagreements names {c}: no such framework/perturbation"
            );
        }
    }
}

/// The rule ids rules/*.yaml ship (every rule the table names must be one).
fn shipped_rules() -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    for e in std::fs::read_dir(repo("rules")).unwrap().flatten() {
        let text = std::fs::read_to_string(e.path()).unwrap();
        for line in text.lines() {
            if let Some(id) = line.trim_start().strip_prefix("- id: ") {
                ids.insert(id.trim().to_string());
            }
        }
    }
    ids
}

#[test]
fn table_names_shipped_rules_and_reports() {
    let m = reality::matrix();
    validate(&m);
    let shipped = shipped_rules();
    let mut named: Vec<&String> = m.expect_gpu_rules.iter().collect();
    named.extend(m.machine_later.values().flatten().map(|l| &l.rule));
    named.extend(m.place_later.values().flatten().map(|l| &l.rule));
    for p in &m.perturbations {
        named.extend(p.cause.iter().flat_map(|c| c.rules.iter()));
        named.extend(p.later.iter().map(|l| &l.rule));
    }
    for r in named {
        assert!(
            shipped.contains(r),
            "the table names {r}, which no rules/*.yaml ships"
        );
    }
}

/// The cells of the table that the filter keeps, with their venvs (None: skipped).
fn cells(m: &Matrix) -> Option<Vec<Cell>> {
    let mut wanted: BTreeMap<&str, Vec<(&reality::Perturbation, Machine)>> = BTreeMap::new();
    for p in &m.perturbations {
        for f in &p.frameworks {
            for machine in [Machine::NoDriver, Machine::GpuBox] {
                if selected(p, &format!("{f}/{}/{}", p.id, machine.name())) {
                    wanted.entry(f.as_str()).or_default().push((p, machine));
                }
            }
        }
    }
    let mut out = vec![];
    for fw in &m.frameworks {
        let Some(list) = wanted.get(fw.id.as_str()) else {
            continue;
        };
        let reqs: Vec<&str> = fw.requirements.iter().map(String::as_str).collect();
        let base = pypi::need(&reqs.join(" "), pypi::cached_venv(&reqs))?;
        for (p, machine) in list {
            let what = format!("{}/{}", fw.id, p.id);
            out.push(pypi::need(&what, reality::cell(fw, p, *machine, &base))?);
        }
    }
    Some(out)
}

/// Run the cells two at a time: the real import (cached), then `check` with and without
/// `--expect-gpu`.
fn run_all(m: &Matrix, cells: Vec<Cell>, nvml: &Path) -> Vec<Ran> {
    let queue = Mutex::new(cells.into_iter().collect::<std::collections::VecDeque<_>>());
    let done = Mutex::new(vec![]);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let Some(cell) = queue.lock().unwrap().pop_front() else {
                    break;
                };
                let outcome = reality::real_import(&cell);
                let checks = [false, true]
                    .into_iter()
                    .map(|eg| {
                        let run = reality::check(&cell, eg, Some(nvml));
                        let v = reality::judge(m, &cell, &outcome, eg, &run);
                        (eg, run, v)
                    })
                    .collect();
                eprintln!(
                    "reality: {} {} {}",
                    cell.name(),
                    if outcome.works { "works" } else { "BREAKS" },
                    if outcome.cached { "(cached)" } else { "" }
                );
                done.lock().unwrap().push(Ran {
                    cell,
                    outcome,
                    checks,
                });
            });
        }
    });
    let mut ran = done.into_inner().unwrap();
    ran.sort_by_key(|r| (r.cell.fw.id.clone(), r.cell.p.id.clone(), r.cell.machine));
    ran
}

fn cell_name(r: &Ran, eg: bool) -> String {
    format!(
        "{}/{}",
        r.cell.name(),
        if eg { "expect-gpu" } else { "plain" }
    )
}

fn said(run: &CheckRun) -> String {
    let notable: Vec<String> = run
        .findings
        .iter()
        .filter(|f| f.severity == "error" || f.severity == "warning")
        .map(|f| f.short())
        .collect();
    if notable.is_empty() {
        "quiet".into()
    } else {
        notable.join("; ")
    }
}

fn esc(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// (command as printed, venv, cells that print it) for each `pip install …` fix.
fn pip_fixes(ran: &[Ran]) -> BTreeMap<(String, PathBuf), Vec<String>> {
    let mut fixes: BTreeMap<(String, PathBuf), Vec<String>> = BTreeMap::new();
    for r in ran {
        for (eg, run, _) in &r.checks {
            for f in &run.findings {
                if let Some(cmd) = f
                    .fix_command
                    .as_deref()
                    .filter(|c| c.contains("pip install"))
                {
                    fixes
                        .entry((cmd.to_string(), r.cell.venv.clone()))
                        .or_default()
                        .push(format!("{} ({})", cell_name(r, *eg), f.rule));
                }
            }
        }
    }
    fixes
}

/// Split a shell command line the simple way (single and double quotes, no escapes).
fn shell_words(s: &str) -> Vec<String> {
    let (mut words, mut cur, mut quote, mut any) = (vec![], String::new(), None, false);
    for ch in s.chars() {
        match (quote, ch) {
            (None, '\'' | '"') => (quote, any) = (Some(ch), true),
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() => {
                if any {
                    words.push(std::mem::take(&mut cur));
                }
                any = false;
            }
            (_, c) => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any {
        words.push(cur);
    }
    words
}

/// `pip install --dry-run` of the fix's arguments in a hard-linked copy of the venv: whether
/// pip resolves it (and the reason when not).
fn dry_run(cmd: &str, venv: &Path) -> String {
    let words = shell_words(cmd.split("&&").next().unwrap_or(cmd));
    let Some(i) = words.iter().position(|w| w == "install") else {
        return "not a pip install".into();
    };
    let copy = reality::root()
        .join("dryrun")
        .join(format!("{:016x}", reality::fnv(&venv.to_string_lossy())));
    if !copy.join("bin/python").exists() {
        let _ = std::fs::create_dir_all(copy.parent().unwrap());
        if let Err(e) = pypi::run(
            std::process::Command::new("cp")
                .args(["-a", "--link"])
                .arg(venv)
                .arg(&copy),
        ) {
            return format!("could not copy the venv: {e}");
        }
    }
    let mut c = pypi::pip(&copy.join("bin/python"));
    c.args(["install", "--dry-run", "--timeout", "30"])
        .args(&words[i + 1..]);
    let (status, _, stderr) = reality::run_timeout(&mut c, Duration::from_secs(240));
    if status == "exit 0" {
        return "resolves".into();
    }
    let why = stderr
        .lines()
        .rev()
        .find(|l| l.contains("ERROR"))
        .unwrap_or(status.as_str())
        .to_string();
    let net = stderr.contains("Name or service not known") || stderr.contains("NewConnectionError");
    format!(
        "{}: {}",
        if net {
            "index unreachable here"
        } else {
            "does not resolve"
        },
        reality::shorten_paths(&why, 160)
    )
}

fn today() -> String {
    let out = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d"])
        .output();
    out.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// The agreement table in Markdown, for BENCHMARKS.md.
fn table(m: &Matrix, ran: &[Ran], fixes: &[(String, String, Vec<String>)]) -> String {
    let total = ran.len() * 2;
    let disagree: Vec<(String, &Ran, &CheckRun, &Verdict)> = ran
        .iter()
        .flat_map(|r| {
            r.checks
                .iter()
                .filter(|c| !c.2.agree)
                .map(move |(eg, run, v)| (cell_name(r, *eg), r, run, v))
        })
        .collect();
    let breaks = ran.iter().filter(|r| !r.outcome.works).count();
    let cached = ran.iter().filter(|r| r.outcome.cached).count();
    let pairs: BTreeSet<(&str, &str)> = ran
        .iter()
        .map(|r| (r.cell.fw.id.as_str(), r.cell.p.id.as_str()))
        .collect();
    let mut t = format!(
        "### Reality matrix, {} (envdoctor {})\n\n{} cells ({} framework × perturbation pairs × 2 machines × {{plain, --expect-gpu}}): **{} agree, {} disagree**. Real imports: {} break, {} work ({} reused from the outcome cache).\n\n",
        today(),
        env!("CARGO_PKG_VERSION"),
        total,
        pairs.len(),
        total - disagree.len(),
        disagree.len(),
        breaks,
        ran.len() - breaks,
        cached
    );
    t += "#### Disagreements\n\n| cell | real import | check says | why it disagrees | known reason (`known_disagreements`) |\n|---|---|---|---|---|\n";
    for (name, r, run, v) in &disagree {
        let known = m
            .known_disagreements
            .iter()
            .find(|k| k.covers(name))
            .map_or("**none: a defect**".to_string(), |k| {
                format!("{} (evidence: {})", k.why, k.evidence)
            });
        let real = if r.outcome.works {
            "works".to_string()
        } else {
            format!("breaks: {}", reality::why_broken(&r.outcome))
        };
        t += &format!(
            "| {} | {} | {} | {} | {} |\n",
            name,
            esc(&real),
            esc(&said(run)),
            esc(&v.reasons.join("; ")),
            esc(&known)
        );
    }
    t += "\n#### Every cell\n\n| framework | perturbation | machine | real import | check (plain) | check (--expect-gpu) |\n|---|---|---|---|---|---|\n";
    for r in ran {
        let real = if r.outcome.works {
            "works".to_string()
        } else {
            format!("**breaks**: {}", reality::why_broken(&r.outcome))
        };
        let col = |eg: bool| {
            let (_, run, v) = r.checks.iter().find(|c| c.0 == eg).unwrap();
            format!("{} {}", if v.agree { "✓" } else { "✗" }, said(run))
        };
        t += &format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            r.cell.fw.id,
            r.cell.p.id,
            r.cell.machine.name(),
            esc(&real),
            esc(&col(false)),
            esc(&col(true))
        );
    }
    t += "\n#### Perturbations\n\n| perturbation | place | what | report |\n|---|---|---|---|\n";
    for p in &m.perturbations {
        t += &format!(
            "| {} | {:?} | {} | {} |\n",
            p.id,
            p.place,
            esc(&p.what),
            p.report
        );
    }
    t += "\n#### Fix commands printed on the matrix (`pip install --dry-run` in a copy of the cell's venv; one that pip cannot resolve fails the test)\n\n| command | result | printed on |\n|---|---|---|\n";
    for (cmd, result, on) in fixes {
        let more = if on.len() > 3 {
            format!(" and {} more", on.len() - 3)
        } else {
            String::new()
        };
        t += &format!(
            "| `{}` | {} | {}{} |\n",
            esc(cmd),
            esc(result),
            esc(&on[..on.len().min(3)].join(", ")),
            more
        );
    }
    t
}

/// Item 7 of issue 24: each breaking cell's real stderr with its known cause, as a `diagnose`
/// corpus file (`fixtures/logs/reality/<framework>--<perturbation>.log` and `.cause.json`).
fn write_corpus(ran: &[Ran]) {
    let dir = repo("fixtures/logs/reality");
    std::fs::create_dir_all(&dir).unwrap();
    let mut seen = BTreeSet::new();
    for r in ran.iter().filter(|r| !r.outcome.works) {
        let base = format!("{}--{}", r.cell.fw.id, r.cell.p.id);
        let log = reality::shorten_paths(&r.outcome.stderr, usize::MAX);
        let name = if seen.insert(base.clone()) {
            base
        } else if std::fs::read_to_string(dir.join(format!("{base}.log"))).is_ok_and(|t| t == log) {
            continue;
        } else {
            format!("{base}--{}", r.cell.machine.name())
        };
        let cause = r.cell.p.cause.clone();
        let confirmed = r.checks.iter().find(|c| !c.0).and_then(|(_, run, v)| {
            let cause = cause.as_ref()?;
            v.agree.then(|| {
                run.findings
                    .iter()
                    .find(|f| f.severity == "error" && cause.rules.contains(&f.rule))
            })?
        });
        let rule = confirmed
            .map(|f| f.rule.clone())
            .or_else(|| cause.as_ref().and_then(|c| c.rules.first().cloned()))
            .unwrap_or_default();
        let sidecar = serde_json::json!({
            "cell": r.cell.name(),
            "framework": r.cell.fw.requirements,
            "perturbation": r.cell.p.id,
            "what": r.cell.p.what,
            "report": r.cell.p.report,
            "rule": rule,
            "rule_confirmed_by_check": confirmed.is_some(),
            "rules": cause.as_ref().map(|c| c.rules.clone()).unwrap_or_default(),
            "library": cause.as_ref().map(|c| c.names.clone()).unwrap_or_default(),
            "status": r.outcome.status,
        });
        std::fs::write(dir.join(format!("{name}.log")), log).unwrap();
        std::fs::write(
            dir.join(format!("{name}.cause.json")),
            serde_json::to_string_pretty(&sidecar).unwrap() + "\n",
        )
        .unwrap();
    }
}

#[test]
fn check_agrees_with_the_real_import_in_every_cell() {
    let m = reality::matrix();
    validate(&m);
    // Its own switch on top of the PyPI tier: it does not agree in every cell yet (the table
    // of 2026-11-27 in BENCHMARKS.md names each disagreement and its reason), and a cold run
    // builds five framework venvs and their perturbed copies. Run it by hand:
    // `ENVDOCTOR_REALITY=1 ENVDOCTOR_REQUIRE_PYPI=1 cargo test --test integration reality_matrix`.
    if std::env::var_os("ENVDOCTOR_REALITY").is_none() {
        eprintln!("SKIPPED: the reality matrix runs with ENVDOCTOR_REALITY=1 (see BENCHMARKS.md)");
        return;
    }
    if !cc::have_cc() {
        assert!(
            !pypi::require_pypi(),
            "the reality matrix needs cc (the libcuda.so.1 stand-in)"
        );
        eprintln!("SKIPPED: the reality matrix needs cc");
        return;
    }
    let Some(cells) = cells(&m) else { return };
    let ran = run_all(&m, cells, &fake_nvml::library());
    let fixes: Vec<(String, String, Vec<String>)> = pip_fixes(&ran)
        .into_iter()
        .map(|((cmd, venv), on)| {
            let result = dry_run(&cmd, &venv);
            (cmd, result, on)
        })
        .collect();
    let t = table(&m, &ran, &fixes);
    let out = repo("target/reality-matrix.md");
    let _ = std::fs::write(&out, &t);
    if let Some(extra) = std::env::var_os("ENVDOCTOR_REALITY_TABLE") {
        std::fs::write(&extra, &t).unwrap();
    }
    println!("{t}");
    if std::env::var_os("ENVDOCTOR_REALITY_WRITE_CORPUS").is_some() {
        write_corpus(&ran);
    }
    // Item 6: a printed `pip install` must resolve in the cell's venv. An index this machine
    // cannot reach, or pip's own timeout on a loaded box, is reported in the table only.
    let unresolved: Vec<String> = fixes
        .iter()
        .filter(|(_, result, _)| {
            result.starts_with("does not resolve") && !result.ends_with("timeout")
        })
        .map(|(cmd, result, on)| format!("`{cmd}` ({}): {result}", on.join(", ")))
        .collect();
    assert!(
        unresolved.is_empty(),
        "fix commands that pip cannot resolve:\n{}",
        unresolved.join("\n")
    );
    let (unexplained, stale) = against_known(&m, &ran);
    assert!(
        unexplained.is_empty() && stale.is_empty(),
        "check disagrees with the real import in {} of {} cells without a known reason, and {} \
         known_disagreements entries no cell needs any more (table: {}):\n{}\n{}",
        unexplained.len(),
        ran.len() * 2,
        stale.len(),
        out.display(),
        unexplained.join("\n"),
        stale.join("\n")
    );
}

/// The disagreements that no `known_disagreements` entry explains, and the entries that cover
/// cells which ran but where every one of them agrees now (stale: take them off the table).
fn against_known(m: &Matrix, ran: &[Ran]) -> (Vec<String>, Vec<String>) {
    let mut unexplained = vec![];
    let mut used = vec![false; m.known_disagreements.len()];
    let mut ran_any = vec![false; m.known_disagreements.len()];
    for r in ran {
        for (eg, _, v) in &r.checks {
            let name = cell_name(r, *eg);
            let mut known = false;
            for (i, k) in m.known_disagreements.iter().enumerate() {
                if k.covers(&name) {
                    known = true;
                    ran_any[i] = true;
                    used[i] |= !v.agree;
                }
            }
            if !v.agree && !known {
                unexplained.push(format!("{name}: {}", v.reasons.join("; ")));
            }
        }
    }
    let stale = m
        .known_disagreements
        .iter()
        .enumerate()
        .filter(|(i, _)| ran_any[*i] && !used[*i])
        .map(|(_, k)| {
            format!(
                "known_disagreements {:?}: every cell it covers agrees now",
                k.cells
            )
        })
        .collect();
    (unexplained, stale)
}

/// The saved corpus (item 7) is usable without PyPI: every log has its sidecar, naming a rule
/// that ships and a cell of the table.
#[test]
fn corpus_sidecars_name_shipped_rules() {
    let m = reality::matrix();
    let shipped = shipped_rules();
    let perturbations: BTreeSet<&str> = m.perturbations.iter().map(|p| p.id.as_str()).collect();
    let dir = repo("fixtures/logs/reality");
    let mut logs = 0;
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let path = e.path();
        if path.extension().is_none_or(|x| x != "log") {
            continue;
        }
        logs += 1;
        let sidecar = path.with_extension("cause.json");
        let text = std::fs::read_to_string(&sidecar)
            .unwrap_or_else(|e| panic!("{}: {e}", sidecar.display()));
        let v: serde_json::Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", sidecar.display()));
        let rule = v["rule"].as_str().unwrap_or("");
        assert!(
            shipped.contains(rule),
            "{}: rule {rule:?} is not shipped",
            sidecar.display()
        );
        let p = v["perturbation"].as_str().unwrap_or("");
        assert!(
            perturbations.contains(p),
            "{}: perturbation {p:?} is not in the table",
            sidecar.display()
        );
        let log = std::fs::read_to_string(&path).unwrap();
        assert!(!log.trim().is_empty(), "{}: empty log", path.display());
    }
    eprintln!("{logs} reality corpus logs");
}
