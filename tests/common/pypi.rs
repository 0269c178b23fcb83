//! Test helper: running python3/pip for tests that need PyPI, under the project's policy.
//!
//! PyPI is a tier of its own: plain `cargo test` downloads nothing from it. `ENVDOCTOR_PYPI=1`
//! runs the tier (real framework venvs, real NVIDIA wheels: about 14 GB cold); a test of it
//! skips (saying why) when PyPI or python3 is not at hand, unless `ENVDOCTOR_REQUIRE_PYPI` is
//! set (CI sets both), where it fails instead. `ENVDOCTOR_REQUIRE_PYPI` implies the tier.
//! The gate sits where the network is used: [`cached_venv`] and [`run`] of a `pip install`,
//! `pip download` or `pip wheel` that may reach an index. A test that only makes a venv with
//! `python3 -m venv` (no index) still runs in the quick tier.
//! `use crate::common::pypi;`
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

/// Whether PyPI tests are mandatory here (fail instead of skip); implies [`enabled`].
pub fn require_pypi() -> bool {
    std::env::var_os("ENVDOCTOR_REQUIRE_PYPI").is_some()
}

/// Whether the PyPI tier runs: `ENVDOCTOR_PYPI` set to anything but `0` or empty, or
/// [`require_pypi`].
pub fn enabled() -> bool {
    require_pypi() || std::env::var("ENVDOCTOR_PYPI").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// Why a PyPI step does not run here, when the tier is off.
pub fn off() -> Result<(), String> {
    if enabled() {
        Ok(())
    } else {
        Err("the PyPI tier is off (ENVDOCTOR_PYPI=1 runs it)".into())
    }
}

/// Whether `cmd` is a pip command that may download from an index.
fn reaches_pypi(cmd: &Command) -> bool {
    let args: Vec<_> = cmd.get_args().filter_map(|a| a.to_str()).collect();
    let Some(at) = args.iter().position(|a| *a == "pip") else {
        return false;
    };
    let sub = args[at + 1..].iter().find(|a| !a.starts_with('-'));
    matches!(sub, Some(&"install" | &"download" | &"wheel")) && !args.contains(&"--no-index")
}

/// Run a command that must succeed: its stdout, or why not. A pip command that may reach PyPI
/// is refused (an `Err`) while the tier is off.
pub fn run(cmd: &mut Command) -> Result<String, String> {
    if reaches_pypi(cmd) {
        off()?;
    }
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Skip (None, with a message) or fail, as the policy says.
pub fn need<T>(what: &str, r: Result<T, String>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(e) if require_pypi() => panic!("{what}: {e}"),
        Err(e) if !enabled() => {
            eprintln!("SKIPPED: {what}: {e}");
            None
        }
        Err(e) => {
            eprintln!("SKIPPED: {what} needs python3, pip and PyPI: {e}");
            None
        }
    }
}

/// `PY -m pip` with quiet, non-interactive defaults.
pub fn pip(py: &Path) -> Command {
    let mut c = Command::new(py);
    c.args([
        "-m",
        "pip",
        "--disable-pip-version-check",
        "--no-input",
        "-q",
    ]);
    c
}

/// Where large PyPI artefacts (whole framework venvs, downloaded wheel files) are kept between
/// runs, outside the clone: `$ENVDOCTOR_PYPI_CACHE`, else `$XDG_CACHE_HOME/envdoctor-pypi`, else
/// `~/.cache/envdoctor-pypi`. pip's own download cache (`~/.cache/pip`) sits beside it.
pub fn cache_dir() -> std::path::PathBuf {
    if let Some(d) = std::env::var_os("ENVDOCTOR_PYPI_CACHE") {
        return d.into();
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("envdoctor-pypi")
}

/// FNV-1a: a stable name for a requirement set (std's hasher may change between releases).
pub fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf29ce484222325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
    })
}

/// A venv of `python3` with `reqs` installed (pip's resolver, real wheels from PyPI), made once
/// under [`cache_dir`]`/venvs/` and reused by later tests and runs. Tests must treat it as
/// read-only: copy what they mutate. It is built in place (its scripts name their real path) under
/// a lock directory, so concurrent tests wait for one build instead of racing; a build that died
/// leaves no `.complete` marker and is redone. Returns the venv directory.
pub fn cached_venv(reqs: &[&str]) -> Result<std::path::PathBuf, String> {
    off()?;
    let py_version = run(Command::new("python3").args(["-c", "import sys; print(sys.version)"]))?;
    let key = format!("{}|{}", py_version.trim(), reqs.join(" "));
    let slug: String = reqs
        .join("_")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '-'
            }
        })
        .take(60)
        .collect();
    let venvs = cache_dir().join("venvs");
    let dir = venvs.join(format!("{slug}-{:016x}", fnv(&key)));
    let done = dir.join(".complete");
    std::fs::create_dir_all(&venvs).map_err(|e| format!("{}: {e}", venvs.display()))?;
    let lock = venvs.join(format!("{slug}-{:016x}.lock", fnv(&key)));
    let start = std::time::Instant::now();
    loop {
        if done.is_file() {
            return Ok(dir);
        }
        if std::fs::create_dir(&lock).is_ok() {
            break;
        }
        // A lock older than 45 minutes belongs to a build that died.
        let stale = std::fs::metadata(&lock)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age.as_secs() > 45 * 60);
        if stale {
            let _ = std::fs::remove_dir(&lock);
        } else if start.elapsed().as_secs() > 60 * 60 {
            return Err(format!("{}: still locked after an hour", lock.display()));
        }
        std::thread::sleep(std::time::Duration::from_secs(2));
    }
    let built = (|| {
        if done.is_file() {
            return Ok(());
        }
        let _ = std::fs::remove_dir_all(&dir);
        run(Command::new("python3").args(["-m", "venv"]).arg(&dir))?;
        run(pip(&dir.join("bin/python"))
            .args(["install", "--timeout", "60"])
            .args(reqs))?;
        std::fs::write(&done, &key).map_err(|e| format!("{}: {e}", done.display()))
    })();
    let _ = std::fs::remove_dir(&lock);
    built.map(|()| dir)
}

/// The wheel `file` of `spec` (built for CPython `py`, manylinux x86_64) in the cache, downloaded
/// once with `pip download --no-deps`: real old releases' files for tests that need their ELF
/// facts or put them where people put them.
pub fn wheel_file(spec: &str, file: &str, py: &str) -> Result<std::path::PathBuf, String> {
    let dir = cache_dir().join("wheels");
    let whl = dir.join(file);
    if whl.is_file() {
        return Ok(whl);
    }
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    run(pip(Path::new("python3"))
        .args([
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--python-version",
            py,
            "--platform",
            "manylinux2010_x86_64",
            "--platform",
            "manylinux1_x86_64",
            "-d",
        ])
        .arg(&dir)
        .arg(spec))?;
    whl.is_file()
        .then_some(whl)
        .ok_or_else(|| format!("{file} not downloaded"))
}
