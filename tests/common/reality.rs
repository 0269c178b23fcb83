//! Test helper for the reality matrix (`tests/reality_matrix.rs`, issue 24): the perturbation
//! table (`tests/reality/perturbations.yaml`) as data, the real artefacts each cell needs (old
//! `nvidia-*` wheels from PyPI, unpacked; hard-linked copies of the cached venvs changed with
//! pip; a `libcuda.so.1` stand-in), the real import in a child interpreter with its outcome
//! cached by a hash of its inputs, `envdoctor check` on the same cell, and the agreement
//! judgement between the two.
//!
//! Everything large or slow lives outside the clone under [`pypi::cache_dir`]`/reality/`:
//! `wheels/` (downloads), `trees/` (unpacked wheels, one tree per perturbation), `venvs/`
//! (changed copies), `cells/` (each cell's HOME and working directory), `outcomes/` (the real
//! imports' results), `xdg/` (envdoctor's own load cache, shared by the cells).
#![allow(dead_code)]

use crate::common::{cc, pypi};

use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The table, as read from `tests/reality/perturbations.yaml`.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct Matrix {
    pub frameworks: Vec<Framework>,
    pub expect_gpu_rules: Vec<String>,
    /// Warnings any cell of a machine may give (machine name → what breaks later there).
    #[serde(default)]
    pub machine_later: BTreeMap<String, Vec<Later>>,
    /// Warnings any cell whose perturbation is made in a place may give, true of how the
    /// harness makes it (place name, as in `place:` → what it breaks later).
    #[serde(default)]
    pub place_later: BTreeMap<String, Vec<Later>>,
    pub perturbations: Vec<Perturbation>,
    /// Cells where `check` and the oracle disagree for a reason outside envdoctor's verdict
    /// (the simulated machine cannot show it), each with its evidence. Any other disagreement
    /// fails the matrix, and so does an entry that no cell needs any more.
    #[serde(default)]
    pub known_disagreements: Vec<Known>,
}

/// One explained disagreement: the cells it covers and why the oracle, not `check`, is off.
#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Known {
    /// Cell names (`framework/perturbation/machine/plain|expect-gpu`); a trailing `/` or a
    /// part of a name covers every cell whose name starts with it.
    pub cells: Vec<String>,
    pub why: String,
    /// What shows it: a command's output, a loader log, a public report.
    pub evidence: String,
}

impl Known {
    pub fn covers(&self, cell: &str) -> bool {
        self.cells.iter().any(|c| cell.starts_with(c.as_str()))
    }
}

#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Framework {
    pub id: String,
    pub requirements: Vec<String>,
    pub cuda: bool,
    /// The import and the first operation that touches the libraries.
    pub code: String,
    /// Code run after `code` that makes the framework's own loader open what it opens when a
    /// GPU starts (TensorFlow's `TryDlopenCUDALibraries`, whose failure is "Cannot dlopen some
    /// GPU libraries ... Skipping registering GPU devices"); each library it cannot open is a
    /// stderr line matching `gpu_failed`. Run with `gpu_env`.
    #[serde(default)]
    pub gpu_code: Option<String>,
    /// The regex whose first group names a library `gpu_code` could not open.
    #[serde(default)]
    pub gpu_failed: Option<String>,
    /// Extra environment for the child when `gpu_code` is set (the loader's log level).
    #[serde(default)]
    pub gpu_env: BTreeMap<String, String>,
}

#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Place {
    LdLibraryPath,
    LdPreload,
    Pythonpath,
    Cwd,
    UserSite,
    LdSoConf,
    Path,
    Env,
    Venv,
}

impl Place {
    /// Its name as the table writes it.
    pub fn name(&self) -> &'static str {
        match self {
            Place::LdLibraryPath => "ld-library-path",
            Place::LdPreload => "ld-preload",
            Place::Pythonpath => "pythonpath",
            Place::Cwd => "cwd",
            Place::UserSite => "user-site",
            Place::LdSoConf => "ld-so-conf",
            Place::Path => "path",
            Place::Env => "env",
            Place::Venv => "venv",
        }
    }
}

#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Cause {
    pub rules: Vec<String>,
    /// What the error's subject or message must contain (any of: a soname, its stem, the wheel).
    #[serde(default)]
    pub names: Vec<String>,
}

#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Later {
    pub rule: String,
    pub why: String,
}

#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Perturbation {
    pub id: String,
    pub report: String,
    pub what: String,
    pub frameworks: Vec<String>,
    #[serde(default)]
    pub wheels: Vec<String>,
    pub place: Place,
    #[serde(default)]
    pub dirs: Vec<String>,
    #[serde(default)]
    pub files: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub uninstall: Vec<String>,
    #[serde(default)]
    pub install: Vec<String>,
    #[serde(default)]
    pub cause: Option<Cause>,
    #[serde(default)]
    pub later: Vec<Later>,
    /// In the CI subset (`ENVDOCTOR_REALITY=ci`): the clean venvs and one cell of each
    /// mechanism, so CI stays within its budget while the whole matrix runs by hand.
    #[serde(default)]
    pub ci: bool,
}

/// The table, parsed; a malformed file fails naming itself.
pub fn matrix() -> Matrix {
    let path = crate::common::machine::repo("tests/reality/perturbations.yaml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The two machines of the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Machine {
    NoDriver,
    GpuBox,
}

impl Machine {
    pub fn name(self) -> &'static str {
        match self {
            Machine::NoDriver => "no-driver",
            Machine::GpuBox => "gpu-box",
        }
    }
}

/// `cache_dir()/reality`.
pub fn root() -> PathBuf {
    pypi::cache_dir().join("reality")
}

/// FNV-1a, as `pypi.rs` names its venvs: stable across Rust releases.
pub fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf29ce484222325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
    })
}

fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

fn io<T>(what: &Path, r: std::io::Result<T>) -> Result<T, String> {
    r.map_err(|e| format!("{}: {e}", what.display()))
}

/// The wheel file of `req`, downloaded once with `pip download --no-deps`.
pub fn wheel(req: &str) -> Result<PathBuf, String> {
    let dir = root().join("wheels").join(slug(req));
    let find = |d: &Path| -> Option<PathBuf> {
        std::fs::read_dir(d)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "whl"))
    };
    if let Some(w) = find(&dir) {
        return Ok(w);
    }
    let tmp = dir.with_extension("part");
    let _ = std::fs::remove_dir_all(&tmp);
    io(&tmp, std::fs::create_dir_all(&tmp))?;
    pypi::run(
        pypi::pip(Path::new("python3"))
            .args(["download", "--no-deps", "--timeout", "60", "-d"])
            .arg(&tmp)
            .arg(req),
    )?;
    let _ = std::fs::remove_dir_all(&dir);
    io(&dir, std::fs::rename(&tmp, &dir))?;
    find(&dir).ok_or_else(|| format!("{req}: pip download left no wheel in {}", dir.display()))
}

/// The perturbation's wheels unpacked together (a site directory), once.
pub fn tree(p: &Perturbation) -> Result<Option<PathBuf>, String> {
    // A venv perturbation's wheels go into the venv copy by pip, not into a tree.
    if p.wheels.is_empty() || p.place == Place::Venv {
        return Ok(None);
    }
    let dir = root().join("trees").join(&p.id);
    let done = dir.join(".complete");
    let key = p.wheels.join(" ");
    if std::fs::read_to_string(&done).is_ok_and(|k| k == key) {
        return Ok(Some(dir));
    }
    let _ = std::fs::remove_dir_all(&dir);
    io(&dir, std::fs::create_dir_all(&dir))?;
    for req in &p.wheels {
        let w = wheel(req)?;
        pypi::run(
            Command::new("unzip")
                .args(["-q", "-o"])
                .arg(&w)
                .arg("-d")
                .arg(&dir),
        )?;
    }
    // Wheels carry no file modes through zip here: the toolkit's executables need theirs.
    for d in &p.dirs {
        if d.ends_with("/bin") {
            for e in std::fs::read_dir(dir.join(d))
                .into_iter()
                .flatten()
                .flatten()
            {
                use std::os::unix::fs::PermissionsExt;
                let _ = std::fs::set_permissions(e.path(), std::fs::Permissions::from_mode(0o755));
            }
        }
    }
    io(&done, std::fs::write(&done, &key))?;
    Ok(Some(dir))
}

/// The venv a cell runs in: the cached one, or (place: venv) a copy changed with pip. The copy
/// is `cp -a --link` (hard links: a 5 GB venv costs no data blocks); it is changed only by
/// `pip uninstall` (renames then unlinks) and `pip install` (which unlinks a file before writing
/// one in its place, pip's `operations/install/wheel.py`), so the cached venv's files are never
/// written. Returns (venv, identity for the outcome key).
pub fn venv_for(
    base: &Path,
    fw: &Framework,
    p: &Perturbation,
) -> Result<(PathBuf, String), String> {
    let base_key = std::fs::read_to_string(base.join(".complete")).unwrap_or_default();
    if p.place != Place::Venv {
        return Ok((base.to_path_buf(), format!("{}|{base_key}", base.display())));
    }
    let dir = root().join("venvs").join(format!("{}--{}", fw.id, p.id));
    let key = venv_copy(base, &dir, &p.uninstall, &p.install)?;
    Ok((dir.clone(), format!("{}|{key}", dir.display())))
}

/// `dir`: a hard-linked copy of the venv `base` (`cp -a --link`, made once and kept while its
/// key holds) with `uninstall` removed and `install` added by pip (`--no-deps`, each wheel
/// downloaded once by [`wheel`]). Returns its key (base, uninstall, install).
pub fn venv_copy<S: AsRef<str>>(
    base: &Path,
    dir: &Path,
    uninstall: &[S],
    install: &[S],
) -> Result<String, String> {
    let base_key = std::fs::read_to_string(base.join(".complete")).unwrap_or_default();
    let done = dir.join(".complete");
    let names = |v: &[S]| v.iter().map(AsRef::as_ref).collect::<Vec<_>>().join(" ");
    let key = format!(
        "{}|{base_key}|uninstall {}|install {}",
        base.display(),
        names(uninstall),
        names(install)
    );
    if std::fs::read_to_string(&done).is_ok_and(|k| k == key) {
        relocate(base, dir)?;
        return Ok(key);
    }
    let _ = std::fs::remove_dir_all(dir);
    io(dir, std::fs::create_dir_all(dir.parent().unwrap()))?;
    pypi::run(Command::new("cp").args(["-a", "--link"]).arg(base).arg(dir))?;
    let _ = std::fs::remove_file(&done);
    relocate(base, dir)?;
    let py = dir.join("bin/python");
    if !uninstall.is_empty() {
        pypi::run(
            pypi::pip(&py)
                .args(["uninstall", "-y"])
                .args(uninstall.iter().map(AsRef::as_ref)),
        )?;
    }
    for req in install {
        let w = wheel(req.as_ref())?;
        pypi::run(
            pypi::pip(&py)
                .args(["install", "--no-deps", "--no-index"])
                .arg(&w),
        )?;
    }
    io(&done, std::fs::write(&done, &key))?;
    Ok(key)
}

/// A copied venv's scripts (`bin/pip`'s shebang, `activate`) name the venv they were made in:
/// point them at the copy, as a venv made there would. Each such file is unlinked and written
/// anew (it is a hard link shared with the cached venv, whose copy must stay as it is).
fn relocate(base: &Path, copy: &Path) -> Result<(), String> {
    let (from, to) = (
        base.to_string_lossy().into_owned(),
        copy.to_string_lossy().into_owned(),
    );
    let bin = copy.join("bin");
    for e in io(&bin, std::fs::read_dir(&bin))?.flatten() {
        let path = e.path();
        if path.is_symlink() || !path.is_file() {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        if !text.contains(&from) {
            continue;
        }
        let mode = io(&path, std::fs::metadata(&path))?.permissions();
        io(&path, std::fs::remove_file(&path))?;
        io(&path, std::fs::write(&path, text.replace(&from, &to)))?;
        io(&path, std::fs::set_permissions(&path, mode))?;
    }
    Ok(())
}

/// The `libcuda.so.1` stand-in of `frameworks_gpu_box.rs` (initialises, reports CUDA 13.0),
/// built once at a stable path so that its identity, and so the caches, survive runs.
pub fn driver_dir() -> PathBuf {
    const SRC: &str = "int cuInit(unsigned f) { (void)f; return 0; }\nint cuDriverGetVersion(int *v) { *v = 13000; return 0; }";
    let dir = root().join("driver");
    let stamp = dir.join("source.c");
    if !(std::fs::read_to_string(&stamp).is_ok_and(|s| s == SRC)
        && dir.join("libcuda.so.1").is_file())
    {
        std::fs::create_dir_all(&dir).unwrap();
        cc::Lib::new("libcuda.so.1")
            .c(SRC)
            .build(&dir.join("libcuda.so.1"));
        std::fs::write(&stamp, SRC).unwrap();
    }
    dir
}

/// One (framework, perturbation, machine): where and how it runs.
#[derive(Debug, Clone)]
pub struct Cell {
    pub fw: Framework,
    pub p: Perturbation,
    pub machine: Machine,
    pub venv: PathBuf,
    /// The venv's identity (its path and how it was made), for the outcome key.
    pub venv_id: String,
    pub home: PathBuf,
    pub work: PathBuf,
    pub env: BTreeMap<String, String>,
    /// (place: ld-so-conf) the private ld.so.cache and ld.so.conf bound over /etc's in a mount
    /// namespace of the child only; the real /etc is never written.
    pub ld_so: Option<(PathBuf, PathBuf)>,
    pub tree_id: String,
}

impl Cell {
    pub fn name(&self) -> String {
        format!("{}/{}/{}", self.fw.id, self.p.id, self.machine.name())
    }

    /// `program` with the cell's environment and working directory (inside the mount
    /// namespace for ld-so-conf).
    pub fn command(&self, program: &Path) -> Command {
        let mut c = match &self.ld_so {
            None => Command::new(program),
            Some((cache, conf)) => {
                let mut c = Command::new("/usr/bin/unshare");
                c.args(["-m", "--propagation", "private", "/bin/sh", "-c"])
                    .arg("mount --bind \"$1\" /etc/ld.so.cache && mount --bind \"$2\" /etc/ld.so.conf && shift 2 && exec \"$@\"")
                    .arg("sh")
                    .arg(cache)
                    .arg(conf)
                    .arg(program);
                c
            }
        };
        c.env_clear().envs(&self.env).current_dir(&self.work);
        c
    }
}

fn join_paths(parts: &[PathBuf]) -> String {
    parts
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(":")
}

/// Make the cell's directories and environment (the perturbation's files in place).
pub fn cell(
    fw: &Framework,
    p: &Perturbation,
    machine: Machine,
    base: &Path,
) -> Result<Cell, String> {
    let (venv, venv_id) = venv_for(base, fw, p)?;
    let tree = tree(p)?;
    let dir = root().join("cells").join(&fw.id).join(&p.id);
    let (home, work) = (dir.join("home"), dir.join("work"));
    io(&home, std::fs::create_dir_all(&home))?;
    io(&work, std::fs::create_dir_all(&work))?;
    let mut env = BTreeMap::new();
    env.insert("HOME".to_string(), home.to_string_lossy().into_owned());
    env.insert("PWD".to_string(), work.to_string_lossy().into_owned());
    env.insert(
        "VIRTUAL_ENV".to_string(),
        venv.to_string_lossy().into_owned(),
    );
    let mut path = vec![];
    let mut ld = vec![];
    if machine == Machine::GpuBox {
        ld.push(driver_dir());
    }
    let mut ld_so = None;
    if let Some(t) = &tree {
        let dirs: Vec<PathBuf> = p.dirs.iter().map(|d| t.join(d)).collect();
        match p.place {
            Place::LdLibraryPath => ld.extend(dirs),
            Place::Path => path.extend(dirs),
            Place::LdPreload => {
                let files: Vec<PathBuf> = p.files.iter().map(|f| t.join(f)).collect();
                env.insert("LD_PRELOAD".into(), join_paths(&files));
            }
            Place::Pythonpath => {
                env.insert("PYTHONPATH".into(), t.to_string_lossy().into_owned());
            }
            Place::Cwd => place_copy(t, &work)?,
            Place::UserSite => place_copy(t, &home.join(".local/lib/python3.11/site-packages"))?,
            Place::LdSoConf => ld_so = Some(ld_so_cache(&dir, &dirs)?),
            Place::Env | Place::Venv => {}
        }
    }
    path.push(venv.join("bin"));
    path.push("/usr/bin".into());
    path.push("/bin".into());
    env.insert("PATH".into(), join_paths(&path));
    if !ld.is_empty() {
        env.insert("LD_LIBRARY_PATH".into(), join_paths(&ld));
    }
    env.extend(p.env.clone());
    let tree_id = match &tree {
        Some(t) => std::fs::read_to_string(t.join(".complete")).unwrap_or_default(),
        None => String::new(),
    };
    Ok(Cell {
        fw: fw.clone(),
        p: p.clone(),
        machine,
        venv,
        venv_id,
        home,
        work,
        env,
        ld_so,
        tree_id,
    })
}

/// The tree's `nvidia/` hard-linked under `dest` (a stray directory as users leave them).
fn place_copy(tree: &Path, dest: &Path) -> Result<(), String> {
    io(dest, std::fs::create_dir_all(dest))?;
    if dest.join("nvidia").exists() {
        return Ok(());
    }
    pypi::run(
        Command::new("cp")
            .args(["-a", "--link"])
            .arg(tree.join("nvidia"))
            .arg(dest),
    )?;
    Ok(())
}

/// A private ld.so.conf (the system's, then `dirs`) and the cache `ldconfig -C` builds from it,
/// without touching /etc (`-X`: no links are made in any directory).
fn ld_so_cache(dir: &Path, dirs: &[PathBuf]) -> Result<(PathBuf, PathBuf), String> {
    let etc = dir.join("etc");
    io(&etc, std::fs::create_dir_all(&etc))?;
    let conf = etc.join("ld.so.conf");
    let mut text = std::fs::read_to_string("/etc/ld.so.conf").unwrap_or_default();
    for d in dirs {
        text.push_str(&format!("\n{}\n", d.display()));
    }
    io(&conf, std::fs::write(&conf, &text))?;
    let cache = etc.join("ld.so.cache");
    if !cache.is_file() {
        pypi::run(
            Command::new("ldconfig")
                .arg("-X")
                .arg("-C")
                .arg(&cache)
                .arg("-f")
                .arg(&conf),
        )?;
    }
    Ok((cache, conf))
}

/// What the real import did.
#[derive(serde::Serialize, Deserialize, Debug, Clone)]
pub struct Outcome {
    pub key: String,
    pub works: bool,
    /// Exit status, or the signal that killed it, or "timeout".
    pub status: String,
    pub stderr: String,
    pub seconds: f64,
    /// Libraries the framework's own loader could not open where a GPU starts (`gpu_code`):
    /// on a GPU machine each one breaks GPU use.
    #[serde(default)]
    pub gpu_failed: Vec<String>,
    /// Whether this run reused a cached outcome.
    #[serde(skip)]
    pub cached: bool,
}

const MARK: &str = "REALITY-IMPORT-OK";

/// The outcome's key: everything the import's result depends on.
fn outcome_key(c: &Cell) -> String {
    let driver = if c.machine == Machine::GpuBox {
        std::fs::read_to_string(driver_dir().join("source.c")).unwrap_or_default()
    } else {
        String::new()
    };
    format!(
        "v1\npython: {}\nvenv: {}\ncode: {}{}\nenv: {:?}\ncwd: {}\ntree: {}\nld.so: {:?}\ndriver: {driver}",
        c.venv.join("bin/python").display(),
        c.venv_id,
        c.fw.code,
        c.fw.gpu_code
            .as_ref()
            .map(|g| format!("\ngpu: {g} {:?}", c.fw.gpu_env))
            .unwrap_or_default(),
        c.env,
        c.work.display(),
        c.tree_id,
        c.ld_so.as_ref().map(|(cache, _)| std::fs::metadata(cache).map(|m| m.len()).ok()),
    )
}

/// Run the real import in the cell (or reuse the cached outcome of the same inputs).
pub fn real_import(c: &Cell) -> Outcome {
    let key = outcome_key(c);
    let file = root()
        .join("outcomes")
        .join(format!("{:016x}.json", fnv(&key)));
    if let Ok(text) = std::fs::read_to_string(&file) {
        if let Ok(mut o) = serde_json::from_str::<Outcome>(&text) {
            if o.key == key {
                o.cached = true;
                return o;
            }
        }
    }
    let start = std::time::Instant::now();
    let code = format!(
        "{}\nprint({MARK:?}, flush=True)\n{}\n",
        c.fw.code,
        c.fw.gpu_code.as_deref().unwrap_or("")
    );
    let mut cmd = c.command(&c.venv.join("bin/python"));
    if c.fw.gpu_code.is_some() {
        cmd.envs(&c.fw.gpu_env);
    }
    let (status, stdout, stderr) = run_timeout(cmd.args(["-c", &code]), Duration::from_secs(300));
    let gpu_failed = match &c.fw.gpu_failed {
        Some(re) if stdout.contains(MARK) => {
            let re = regex::Regex::new(re).expect("gpu_failed is a regex");
            let mut v: Vec<String> = re
                .captures_iter(&stderr)
                .filter_map(|m| Some(m.get(1)?.as_str().to_string()))
                .collect();
            v.sort();
            v.dedup();
            v
        }
        _ => Vec::new(),
    };
    let o = Outcome {
        key,
        // The import and first operation printed the mark; what `gpu_code` does after it is
        // judged through `gpu_failed`, not the exit status.
        works: stdout.contains(MARK) && (status == "exit 0" || c.fw.gpu_code.is_some()),
        status,
        stderr: tail(&stderr, 20_000),
        seconds: start.elapsed().as_secs_f64(),
        gpu_failed,
        cached: false,
    };
    let _ = std::fs::create_dir_all(file.parent().unwrap());
    let tmp = file.with_extension("tmp");
    if std::fs::write(&tmp, serde_json::to_string_pretty(&o).unwrap()).is_ok() {
        let _ = std::fs::rename(&tmp, &file);
    }
    o
}

fn tail(s: &str, n: usize) -> String {
    if s.len() <= n {
        return s.to_string();
    }
    let mut i = s.len() - n;
    while !s.is_char_boundary(i) {
        i += 1;
    }
    s[i..].to_string()
}

/// Run with a limit: ("exit N" | "signal N" | "timeout", stdout, stderr).
pub fn run_timeout(c: &mut Command, limit: Duration) -> (String, String, String) {
    use std::io::Read;
    use wait_timeout::ChildExt;
    let mut child = match c.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn() {
        Ok(ch) => ch,
        Err(e) => return (format!("spawn failed: {e}"), String::new(), String::new()),
    };
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut b = vec![];
        let _ = out.read_to_end(&mut b);
        b
    });
    let t_err = std::thread::spawn(move || {
        let mut b = vec![];
        let _ = err.read_to_end(&mut b);
        b
    });
    let status = match child.wait_timeout(limit).ok().flatten() {
        Some(s) => match (s.code(), std::os::unix::process::ExitStatusExt::signal(&s)) {
            (Some(code), _) => format!("exit {code}"),
            (None, Some(sig)) => format!("signal {sig}"),
            _ => "unknown".into(),
        },
        None => {
            let _ = child.kill();
            let _ = child.wait();
            "timeout".into()
        }
    };
    let o = String::from_utf8_lossy(&t_out.join().unwrap_or_default()).into_owned();
    let e = String::from_utf8_lossy(&t_err.join().unwrap_or_default()).into_owned();
    (status, o, e)
}

/// A finding, as `check --format json` gives it.
#[derive(Debug, Clone)]
pub struct Finding {
    pub severity: String,
    pub rule: String,
    pub subject: String,
    pub message: String,
    pub fix_command: Option<String>,
}

impl Finding {
    fn text(&self) -> String {
        format!("{} {}", self.subject, self.message)
    }
    pub fn short(&self) -> String {
        let subj = if self.subject.is_empty() {
            String::new()
        } else {
            format!(" {}", short_subject(&self.subject))
        };
        format!("{} {}{}", self.severity, self.rule, subj)
    }
}

/// `libraries[libcuda.so.1 @ /long/venv/bin/python]` → `libraries[libcuda.so.1]`.
fn short_subject(s: &str) -> String {
    match (s.find(" @ "), s.ends_with(']')) {
        (Some(i), true) => format!("{}]", &s[..i]),
        _ => s.to_string(),
    }
}

/// What `check` said on a cell.
#[derive(Debug, Clone)]
pub struct CheckRun {
    pub exit: String,
    pub findings: Vec<Finding>,
    pub stderr: String,
}

/// The identity of a file (size and modification time), for cache keys.
fn file_id(p: &Path) -> String {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(p)
        .map(|m| {
            format!(
                "{} {} {}.{}",
                p.display(),
                m.len(),
                m.mtime(),
                m.mtime_nsec()
            )
        })
        .unwrap_or_default()
}

/// `envdoctor check --format json` on the cell (the fake NVML on the GPU box). Its output is
/// kept under `checks/`, keyed by the envdoctor executable's identity and everything the real
/// outcome depends on, so a run with the same binary on the same cell only judges again; any
/// rebuild of envdoctor runs every check afresh.
pub fn check(c: &Cell, expect_gpu: bool, nvml: Option<&Path>) -> CheckRun {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_envdoctor"));
    let mut cmd = c.command(&bin);
    cmd.env("XDG_CACHE_HOME", root().join("xdg")).args([
        "check",
        "--format",
        "json",
        // The matrix runs cells side by side on a shared machine; what is judged here is the
        // verdict, not the speed (bench/ measures that).
        "--deadline",
        "300",
    ]);
    let mut args = vec![];
    if expect_gpu {
        args.push("--expect-gpu");
    }
    // The load cache keys on loader variables and library files, not on what Python's own
    // preload reads (sys.path: the working directory, PYTHONPATH, the user site).
    if matches!(c.p.place, Place::Cwd | Place::Pythonpath | Place::UserSite) {
        args.push("--no-load-cache");
    }
    cmd.args(&args);
    let nvml_src = crate::common::machine::repo("tests/fake_nvml/fake_nvml.c");
    if c.machine == Machine::GpuBox {
        cmd.env("FAKE_NVML_SCENARIO", "idle");
        if let Some(n) = nvml {
            cmd.arg("--nvml-lib").arg(n);
        }
    }
    let key = format!(
        "check v1\nexe: {}\npip: {}\nargs: {args:?}\nnvml: {}\n{}",
        file_id(&bin),
        file_id(&c.venv.join("bin/pip")),
        std::fs::read_to_string(&nvml_src)
            .map(|s| fnv(&s))
            .unwrap_or(0),
        outcome_key(c)
    );
    let file = root()
        .join("checks")
        .join(format!("{:016x}.json", fnv(&key)));
    let cached = std::fs::read_to_string(&file)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .filter(|v| v["key"] == key.as_str());
    let (exit, stdout, stderr) = match cached {
        Some(v) => (
            v["exit"].as_str().unwrap_or("").to_string(),
            v["stdout"].as_str().unwrap_or("").to_string(),
            v["stderr"].as_str().unwrap_or("").to_string(),
        ),
        None => {
            let (exit, stdout, stderr) = run_timeout(&mut cmd, Duration::from_secs(300));
            let _ = std::fs::create_dir_all(file.parent().unwrap());
            let v = serde_json::json!({"key": key, "exit": exit, "stdout": stdout, "stderr": tail(&stderr, 4000)});
            let tmp = file.with_extension("tmp");
            if std::fs::write(&tmp, v.to_string()).is_ok() {
                let _ = std::fs::rename(&tmp, &file);
            }
            (exit, stdout, stderr)
        }
    };
    let findings = serde_json::from_str::<Value>(&stdout)
        .ok()
        .and_then(|v| v["findings"].as_array().cloned())
        .map(|a| a.iter().map(finding).collect());
    match findings {
        Some(findings) if exit == "exit 0" || exit == "exit 1" => CheckRun {
            exit,
            findings,
            stderr,
        },
        _ => CheckRun {
            exit,
            findings: vec![],
            stderr: tail(&stderr, 2000),
        },
    }
}

fn finding(f: &Value) -> Finding {
    let s = |k: &str| f[k].as_str().unwrap_or("").to_string();
    Finding {
        severity: s("severity"),
        rule: s("rule"),
        subject: s("subject"),
        message: s("message"),
        fix_command: f["fix"]["command"].as_str().map(str::to_string),
    }
}

/// Rules whose error says a library the framework opens when the GPU starts will not open.
const GPU_START_RULES: &[&str] = &[
    "cuda-library-off-search-path",
    "cuda-library-not-found",
    "library-load-fails",
    "library-undefined-symbol",
    "symbol-version-not-found",
    "library-not-found",
    "framework-nvidia-wheel-missing",
];

/// The judgement of one cell (one check run against the real outcome).
#[derive(Debug, Clone)]
pub struct Verdict {
    pub agree: bool,
    /// Why not (empty when it agrees).
    pub reasons: Vec<String>,
}

/// Whether `check` agrees with the real import (the rules of the module docs of
/// `tests/reality_matrix.rs`).
pub fn judge(m: &Matrix, c: &Cell, o: &Outcome, expect_gpu: bool, run: &CheckRun) -> Verdict {
    let mut reasons = vec![];
    if run.exit != "exit 0" && run.exit != "exit 1" {
        reasons.push(format!(
            "check failed ({}): {}",
            run.exit,
            run.stderr.lines().last().unwrap_or("")
        ));
        return Verdict {
            agree: false,
            reasons,
        };
    }
    let names_cause = |f: &Finding| {
        c.p.cause.as_ref().is_some_and(|cause| {
            cause.rules.contains(&f.rule)
                && (cause.names.is_empty()
                    || cause.names.iter().any(|n| f.text().contains(n.as_str())))
        })
    };
    let gpu_statement = |f: &Finding| {
        m.expect_gpu_rules.contains(&f.rule)
            || (f.rule == "cuda-library-not-found"
                && (f.subject.contains("libcuda.so") || f.subject.contains("libnvidia-")))
    };
    // What the framework's own loader could not open where a GPU starts breaks GPU use: on
    // the GPU box an error must name it, and with --expect-gpu one may.
    let gpu_start_breaks = !o.gpu_failed.is_empty() && (c.machine == Machine::GpuBox || expect_gpu);
    // Named by its soname, or (a wheel rule) by its family: `libcusolver.so.11` → `cusolver`.
    let names_gpu_failure = |f: &Finding| {
        gpu_start_breaks
            && GPU_START_RULES.contains(&f.rule.as_str())
            && o.gpu_failed.iter().any(|l| {
                let family = l.trim_start_matches("lib").split(".so").next().unwrap_or(l);
                f.text().contains(l.as_str()) || f.text().contains(&format!("-{family}-"))
            })
    };
    let errors: Vec<&Finding> = run
        .findings
        .iter()
        .filter(|f| f.severity == "error")
        .collect();
    let cause_errors = errors
        .iter()
        .filter(|f| names_cause(f) && !(o.works && names_gpu_failure(f)))
        .count();
    let gpu_failure_errors = errors.iter().filter(|f| names_gpu_failure(f)).count();
    let gpu_errors = errors
        .iter()
        .filter(|f| !names_cause(f) && !names_gpu_failure(f) && gpu_statement(f))
        .count();
    let other: Vec<String> = errors
        .iter()
        .filter(|f| !names_cause(f) && !names_gpu_failure(f) && !gpu_statement(f))
        .map(|f| f.short())
        .collect();
    if c.machine == Machine::GpuBox && gpu_start_breaks && gpu_failure_errors == 0 {
        reasons.push(format!(
            "GPU use breaks (the framework's own loader cannot open {}); no error names it",
            o.gpu_failed.join(", ")
        ));
    }
    let no_gpu_usable = c.machine == Machine::NoDriver || !c.fw.cuda;
    let want_gpu_errors = usize::from(expect_gpu && no_gpu_usable);
    if o.works {
        if cause_errors > 0 {
            reasons
                .push("the import works, yet an error names the perturbation as its cause".into());
        }
        for w in run.findings.iter().filter(|f| f.severity == "warning") {
            let machine_later = m.machine_later.get(c.machine.name()).into_iter().flatten();
            let place_later = m.place_later.get(c.p.place.name()).into_iter().flatten();
            if !c
                .p
                .later
                .iter()
                .chain(machine_later)
                .chain(place_later)
                .any(|l| l.rule == w.rule)
            {
                reasons.push(format!(
                    "warning for nothing the table says breaks later: {}",
                    w.short()
                ));
            }
        }
    } else if cause_errors == 0 {
        reasons.push(match &c.p.cause {
            Some(cause) => format!(
                "the import breaks; no error names the cause ({} naming {})",
                cause.rules.join("|"),
                if cause.names.is_empty() {
                    "-".to_string()
                } else {
                    cause.names.join("|")
                }
            ),
            None => "the import breaks; the table names no cause for this perturbation".into(),
        });
    }
    if gpu_errors != want_gpu_errors {
        reasons.push(format!(
            "{gpu_errors} error(s) saying no GPU can be used, want {want_gpu_errors}{}",
            if expect_gpu { " (--expect-gpu)" } else { "" }
        ));
    }
    for e in other {
        reasons.push(format!("error naming something else: {e}"));
    }
    Verdict {
        agree: reasons.is_empty(),
        reasons,
    }
}

/// The line of the real stderr that says why the import broke: the last line with the most
/// telling marker (a loader error before a Python exception before anything else).
pub fn why_broken(o: &Outcome) -> String {
    let keys = [
        "undefined symbol",
        "cannot open shared object",
        "ImportError",
        "OSError",
        "RuntimeError",
        "Error",
        "Aborted",
        "Segmentation",
    ];
    let line = keys
        .iter()
        .find_map(|k| o.stderr.lines().rev().find(|l| l.contains(k)))
        .or_else(|| o.stderr.lines().rev().find(|l| !l.trim().is_empty()))
        .unwrap_or(&o.status);
    shorten_paths(line.trim(), 220)
}

/// Paths under the PyPI cache printed relative to it, and the line cut to `n` characters.
pub fn shorten_paths(s: &str, n: usize) -> String {
    let cache = pypi::cache_dir().to_string_lossy().into_owned();
    let s = s.replace(&cache, "$CACHE");
    if s.chars().count() <= n {
        s
    } else {
        s.chars().take(n).collect::<String>() + "…"
    }
}
