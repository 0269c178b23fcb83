//! The native-library probe: what frameworks ask the dynamic loader for, and what glibc's
//! `ld.so` will give them, emulated file by file inside a [`crate::root::Root`].
//!
//! Loader emulation (no library is ever loaded here):
//! - [`elf`]: ELF facts from the header, program headers and `PT_DYNAMIC` (soname, needed,
//!   RPATH/RUNPATH, symbol-version needs and definitions; dynamic symbols with their versions
//!   via `read_with_symbols`) and `ld.so`'s accept test per file;
//! - [`ldcache`]: the binary `/etc/ld.so.cache` (old and new layouts, hwcaps) and its
//!   staleness against `/etc/ld.so.conf`;
//! - [`search`]: the search order itself ([`search::Loader::resolve`], including LD_PRELOAD
//!   reuse, glibc-hwcaps and the glibc release's legacy subdirs) and every other copy of a
//!   library on the machine ([`search::Loader::all_candidates`]);
//! - [`links`]: symlink chains, versions claimed by names, mixed releases in one directory.
//!
//! The probe (stage 2: it needs `pythons[]`) glues the parts together:
//! - [`frameworks`]: `frameworks[]`, what each installed framework asks for, read statically;
//! - [`resolve`]: `libraries[]`, each wanted soname (and the CUDA family the framework's CUDA
//!   implies) resolved from the framework's own entry point, with every other copy;
//! - [`load`]: unless `--no-load`, each resolved library is `dlopen`ed in a child envdoctor
//!   (`__load-child`), one child per interpreter, killed at its time limit (`libraries[].load`).
//!   With `--root` naming another directory than `/` nothing is loaded (`load.status =
//!   "skipped"`): the files belong to another machine, and even when they are ELF for this
//!   architecture their dependencies would be resolved by this machine's loader, not the
//!   probed one's, so a result would describe neither;
//! - [`jobs`]: `--pid PID`, what a running process really mapped.
//!
//! Typical use:
//! ```no_run
//! use envdoctor::probe::libs::{search::{Loader, Object, Requester}, elf, links};
//! use envdoctor::root::{Env, Root};
//! use std::path::Path;
//! let root = Root::host();
//! let loader = Loader::new(&root, &Env::from_process());
//! let python = Object::read(&root, Path::new("/usr/bin/python3")).unwrap().main_executable();
//! let ext = Path::new("/venv/lib/python3.11/site-packages/torch/_C.so");
//! let req = Requester::new(Object::read(&root, ext).unwrap()).loaded_by(python);
//! let res = loader.resolve("libcudart.so.12", &req);
//! if let Some(p) = &res.path {
//!     let facts = links::describe(&root, p);
//!     let info = elf::read(&root, p);
//! }
//! ```

pub mod elf;
pub mod frameworks;
pub mod jobs;
pub mod layout;
pub mod ldcache;
pub mod links;
pub mod load;
pub mod load_cache;
pub mod resolve;
pub mod search;

use super::{pool, Apply, Context};
use crate::snapshot::libs::{Framework, Library, LoadResult, RunningJob};
use crate::snapshot::ProbeError;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Time kept back from the deadline to kill children and hand the facts over.
const MARGIN: Duration = Duration::from_millis(200);

/// The probe entry point (registered as `libs`, stage 2).
pub fn probe(ctx: &Context) -> Apply {
    let (frameworks, libraries, jobs, errors) = collect(ctx);
    Box::new(move |snap| {
        snap.frameworks.extend(frameworks);
        resolve::stamp_unmet_wheels(&mut snap.pythons, &libraries);
        snap.libraries.extend(libraries);
        snap.jobs.extend(jobs);
        snap.probe_errors.extend(errors);
    })
}

/// Everything the probe finds.
pub fn collect(
    ctx: &Context,
) -> (
    Vec<Framework>,
    Vec<Library>,
    Vec<RunningJob>,
    Vec<ProbeError>,
) {
    let root = ctx.root();
    let loader = search::Loader::new(root, ctx.env());
    let mut errors = Vec::new();
    let mut fws = Vec::new();
    // Libraries per interpreter: each group is one environment for the load probe. The
    // interpreters are independent (reading every distribution's RECORD for extensions is most
    // of the time on a machine with many venvs), so they are scanned in parallel.
    let mut groups: Vec<Vec<Library>> = Vec::new();
    let pythons = &ctx.earlier.pythons;
    let slots = pool::map_in_order(pythons, ctx.deadline, |py| {
        let mut errs = Vec::new();
        let world = frameworks::World::of(py, loader.cwd());
        let scans = frameworks::scan_python(
            root,
            &loader,
            py,
            &world,
            &ctx.records,
            &ctx.memo,
            &mut errs,
        );
        let group = resolve::resolve_python(root, &loader, py, &scans, &ctx.memo, &mut errs);
        (scans, group, errs)
    });
    let mut skipped = 0;
    for (slot, py) in slots.into_iter().zip(pythons.iter()) {
        match slot {
            pool::Slot::Done((scans, group, errs)) => {
                groups.push(group);
                fws.extend(scans.into_iter().map(|s| s.framework));
                errors.extend(errs);
            }
            pool::Slot::Panicked => errors.push(ProbeError::new(
                "libs",
                format!(
                    "resolving the libraries of {} failed unexpectedly (a bug in envdoctor)",
                    py.path
                ),
            )),
            pool::Slot::Skipped => skipped += 1,
        }
    }
    if skipped > 0 {
        errors.push(ProbeError::new(
            "libs",
            "the deadline came before every interpreter's libraries were resolved",
        ));
    }
    if !ctx.opts.no_load {
        load_groups(ctx, &mut groups);
    }
    let libraries: Vec<Library> = groups.into_iter().flatten().collect();
    let jobs = ctx
        .opts
        .pids
        .iter()
        .map(|pid| jobs::inspect(root, *pid, &ctx.earlier.pythons, &libraries, &mut errors))
        .collect();
    (fws, libraries, jobs, errors)
}

fn skip_all(groups: &mut [Vec<Library>], why: &str) {
    for l in groups.iter_mut().flatten().filter(|l| l.resolves) {
        l.load = Some(LoadResult {
            status: "skipped".into(),
            error: Some(why.into()),
            ..Default::default()
        });
    }
}

/// Load each group's resolved libraries in its own child (groups in parallel).
fn load_groups(ctx: &Context, groups: &mut [Vec<Library>]) {
    if !ctx.root().is_host() {
        skip_all(
            groups,
            "--root names another machine: its libraries are not loaded here",
        );
        return;
    }
    let exe = match std::env::current_exe() {
        Ok(p) if p.file_name().is_some_and(|n| n == "envdoctor") => p,
        _ => {
            skip_all(groups, "libraries are loaded by a child envdoctor process, and this program is not envdoctor");
            return;
        }
    };
    let run = LoadRun {
        exe,
        env: ctx
            .env()
            .iter()
            .map(|(k, v)| (k.to_os_string(), v.to_os_string()))
            .collect(),
        per_lib: load::per_library_limit(ctx.opts.deadline),
        deadline: ctx.deadline.checked_sub(MARGIN).unwrap_or(ctx.deadline),
        cache: if ctx.opts.no_load_cache {
            None
        } else {
            load_cache::dir(ctx.env())
        },
    };
    std::thread::scope(|s| {
        for group in groups.iter_mut() {
            let run = &run;
            s.spawn(move || load_group(run, group));
        }
    });
}

/// What every load child shares: the program, its environment, the limits, the cache.
struct LoadRun {
    exe: PathBuf,
    env: Vec<(OsString, OsString)>,
    per_lib: Duration,
    deadline: Instant,
    cache: Option<PathBuf>,
}

/// Load one group's resolved libraries in one child (or take the results from the cache).
fn load_group(run: &LoadRun, group: &mut [Library]) {
    // Transitive libraries are loaded with the library that needs them; loading
    // each on its own (cuDNN's sub-libraries are hundreds of MB) says nothing more.
    for l in group
        .iter_mut()
        .filter(|l| l.resolves && l.reason == "transitive")
    {
        l.load = Some(LoadResult {
            status: "skipped".into(),
            error: Some(format!("loaded through {}", l.requester)),
            ..Default::default()
        });
    }
    // What the framework's own code loads by path comes first, as in the real process: a
    // library loaded later that needs the same soname gets that copy (glibc reuses a loaded
    // soname), whatever LD_LIBRARY_PATH holds (torch 2.6's nvJitLink preload, pytorch#138460).
    let mut idx: Vec<usize> = (0..group.len())
        .filter(|i| group[*i].resolves && group[*i].reason != "transitive")
        .collect();
    idx.sort_by_key(|i| group[*i].found_via.as_deref() != Some("preloaded-by-framework"));
    let items: Vec<load::Item> = idx
        .iter()
        .filter_map(|i| {
            let l = &group[*i];
            Some(load::Item {
                family: l.family.clone(),
                path: PathBuf::from(l.path.as_ref()?),
            })
        })
        .collect();
    if items.len() != idx.len() {
        return;
    }
    let results = load_or_cached(run, group, &items);
    for (i, r) in idx.into_iter().zip(results) {
        group[i].load = Some(r);
    }
}

/// The load results of `items`: from the cache when it has them, else loaded (and cached).
fn load_or_cached(run: &LoadRun, group: &[Library], items: &[load::Item]) -> Vec<LoadResult> {
    let (exe, env, cache) = (&run.exe, &run.env, &run.cache);
    let key = cache
        .as_ref()
        .and_then(|_| load_cache::key(exe, env, group, items));
    let cached = cache
        .as_deref()
        .zip(key.as_deref())
        .and_then(|(dir, key)| load_cache::get(dir, key, items.len()));
    match cached {
        Some(r) => r,
        None => {
            let r = load::load_all(exe, env, items, run.per_lib, run.deadline);
            if let (Some(dir), Some(key)) = (cache.as_deref(), key.as_deref()) {
                load_cache::put(dir, key, &r);
            }
            r
        }
    }
}
