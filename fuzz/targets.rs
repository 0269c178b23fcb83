//! One fuzz target per parser of envdoctor, each with its seeds (real files) and, where a
//! checksum or a container would stop a byte mutator, a structure-aware mutator.
//! Include after `engine.rs`: `#[path = "../fuzz/targets.rs"] mod targets;`.
#![allow(dead_code)]

use super::engine::{havoc, Rng, Scratch, Target};
use envdoctor::probe::checkpoint::{
    hdf5, keras, onnx, pickle, references, safetensors, saved_model, tf_ckpt, tf_index, torch,
};
use envdoctor::probe::libs::{elf, ldcache, load};
use envdoctor::probe::python::{discovery::Collector, dist_info, ide, pth, requires, site};
use envdoctor::root::{Env, Root};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

// ---------------------------------------------------------------------------------------------
// Targets.

/// Lock readers: each for a known interpreter and for one whose version is unknown.
fn lock_targets() -> [envdoctor::probe::lock::model::Target; 2] {
    use envdoctor::probe::lock::model::Target;
    [
        Target::linux(Some("3.11.7"), "x86_64"),
        Target::linux(None, "aarch64"),
    ]
}

fn uv_lock(_: &mut Scratch, b: &[u8]) {
    use envdoctor::probe::lock::uv;
    for t in lock_targets() {
        let _ = uv::read(&text(b), &t, &uv::Groups::default());
        let _ = uv::read(&text(b), &t, &uv::Groups::All);
    }
}

fn pylock_toml(_: &mut Scratch, b: &[u8]) {
    for t in lock_targets() {
        let _ = envdoctor::probe::lock::pylock::read(&text(b), &t);
    }
}

fn poetry_lock(_: &mut Scratch, b: &[u8]) {
    for t in lock_targets() {
        let _ = envdoctor::probe::lock::poetry::read(&text(b), &t, &["dev".to_string()]);
    }
}

fn pdm_lock(_: &mut Scratch, b: &[u8]) {
    for t in lock_targets() {
        let _ = envdoctor::probe::lock::pdm::read(&text(b), &t, false);
    }
}

fn pipfile_lock(_: &mut Scratch, b: &[u8]) {
    for t in lock_targets() {
        let _ = envdoctor::probe::lock::pipfile::read(&text(b), &t, true);
    }
}

fn requirements_txt(_: &mut Scratch, b: &[u8]) {
    let t = text(b);
    // Every include is the file itself under a new name: nesting stops at MAX_DEPTH.
    let mut n = 0;
    let mut include = |_: &str, _: &str| -> Result<(String, String), String> {
        n += 1;
        Ok((format!("/p/r{n}.txt"), t.clone()))
    };
    for target in lock_targets() {
        let _ = envdoctor::probe::lock::requirements::read(&t, "/p/r.txt", &target, &mut include);
    }
}

fn conda_environment(_: &mut Scratch, b: &[u8]) {
    let t = text(b);
    let mut include = |_: &str, _: &str| -> Result<(String, String), String> {
        Err("no includes in the fuzzer".into())
    };
    for target in lock_targets() {
        let _ = envdoctor::probe::lock::conda::read_environment(
            &t,
            "/p/environment.yml",
            &target,
            &mut include,
        );
    }
    for line in t.lines().take(64) {
        if let Ok(m) = envdoctor::probe::lock::conda::match_spec(line) {
            if let Some(v) = m.version {
                let _ = envdoctor::probe::lock::conda::version_matches(&v, "1.26.4");
            }
        }
    }
}

fn conda_lock(_: &mut Scratch, b: &[u8]) {
    for t in lock_targets() {
        let _ = envdoctor::probe::lock::conda::read_conda_lock(&text(b), &t);
    }
}

fn pixi_lock(_: &mut Scratch, b: &[u8]) {
    for t in lock_targets() {
        let _ = envdoctor::probe::lock::pixi::read(&text(b), &t, "default");
    }
}

fn metadata(_: &mut Scratch, b: &[u8]) {
    let h = dist_info::parse_headers(b);
    let mut pkg = envdoctor::snapshot::python::Package::default();
    if let Some(v) = h.version {
        dist_info::set_version(&mut pkg, v);
    }
    for r in &h.requires_dist {
        let _ = requires::parse(r);
    }
    if let Some(rp) = h.requires_python {
        let _ = rp.parse::<pep440_rs::VersionSpecifiers>();
    }
}

fn requires_txt(_: &mut Scratch, b: &[u8]) {
    for r in dist_info::egg_requires(&text(b)) {
        let _ = requires::parse(&r);
    }
}

fn record(_: &mut Scratch, b: &[u8]) {
    let t = text(b);
    let first = t
        .lines()
        .next()
        .unwrap_or("")
        .split(',')
        .next()
        .unwrap_or("");
    let _ = load::record_lists(&t, first);
    let _ = load::record_lists(&t, "nvidia/cu13/lib/libcupti.so.13");
}

fn pth_file(_: &mut Scratch, b: &[u8]) {
    let _ = pth::parse(Path::new("/v/lib/python3.11/site-packages"), &text(b));
}

fn pyvenv_cfg(_: &mut Scratch, b: &[u8]) {
    let _ = site::parse_pyvenv_cfg(Path::new("/v/pyvenv.cfg"), &text(b));
}

fn with_collector(s: &Scratch, env: &[(&str, &str)], f: impl FnOnce(&mut Collector)) {
    let root = Root::new(s.dir.path());
    let env = Env::from_pairs(env.iter().copied());
    let mut errors = Vec::new();
    let mut c = Collector::new(&root, &env, Some(PathBuf::from("/proj")), &mut errors);
    f(&mut c);
}

fn vscode_settings(s: &mut Scratch, b: &[u8]) {
    s.put("/proj/.vscode/settings.json", b);
    with_collector(s, &[], ide::vscode);
}

fn pycharm_xml(s: &mut Scratch, b: &[u8]) {
    s.put("/proj/.idea/misc.xml", b);
    s.put("/cfg/JetBrains/PyCharm2024.1/options/jdk.table.xml", b);
    with_collector(
        s,
        &[("XDG_CONFIG_HOME", "/cfg"), ("HOME", "/home/u")],
        ide::pycharm,
    );
}

fn kernelspec(s: &mut Scratch, b: &[u8]) {
    s.put("/data/kernels/k/kernel.json", b);
    with_collector(s, &[("JUPYTER_DATA_DIR", "/data")], ide::jupyter);
}

fn ld_so_cache(_: &mut Scratch, b: &[u8]) {
    if let Ok(c) = ldcache::parse(b) {
        let _ = c.lookup("libcudart.so.12", &["x86-64-v3"]);
        let _ = c.keys();
    }
}

fn elf_file(s: &mut Scratch, b: &[u8]) {
    s.put("/lib/libx.so", b);
    let root = Root::new(s.dir.path());
    let _ = elf::read(&root, Path::new("/lib/libx.so"));
    let _ = elf::read_with_symbols(&root, Path::new("/lib/libx.so"));
}

fn tf_index_file(s: &mut Scratch, b: &[u8]) {
    let f = s.file(b);
    let _ = tf_index::read_table(f, b.len() as u64);
    let _ = tf_index::read_bundle(f, b.len() as u64);
}

fn tf_state(_: &mut Scratch, b: &[u8]) {
    let _ = tf_ckpt::parse_state(&text(b));
}

fn saved_model_pb(_: &mut Scratch, b: &[u8]) {
    let mut sm = envdoctor::snapshot::checkpoint::SavedModel::default();
    let _ = saved_model::parse_saved_model_pb(b, &mut sm);
    let _ = saved_model::keras_metadata_classes(b);
    let _ = tf_ckpt::first_bytes_field(b, 1);
}

fn keras_zip(s: &mut Scratch, b: &[u8]) {
    let f = s.file(b);
    if let Ok(f) = f.try_clone() {
        use std::io::Seek;
        let mut f = f;
        let _ = f.rewind();
        let _ = keras::inspect_v3(f);
    }
}

fn hdf5_file(s: &mut Scratch, b: &[u8]) {
    let f = s.file(b);
    let len = b.len() as u64;
    let _ = hdf5::find_superblock(f, len);
    let _ = hdf5::root_attributes(f, len);
    let _ = keras::inspect_h5(f, len);
}

fn torch_zip(s: &mut Scratch, b: &[u8]) {
    let f = s.file(b);
    if let Ok(f) = f.try_clone() {
        use std::io::Seek;
        let mut f = f;
        let _ = f.rewind();
        let _ = torch::inspect_zip(f);
    }
}

fn torch_pickle(_: &mut Scratch, b: &[u8]) {
    let _ = torch::scan(b);
    let _ = torch::inspect_legacy(b);
}

/// The opcode walker on plain pickles and joblib files (raw arrays sized from the wrapper state,
/// object arrays as nested pickles), under a deadline, and the references built from it.
fn pickle_walk(_: &mut Scratch, b: &[u8]) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(200);
    let (scan, stop) = pickle::scan_with(b, Some(deadline));
    let _ = references::from_scans(&[scan], stop);
}

fn safetensors_file(s: &mut Scratch, b: &[u8]) {
    let f = s.file(b);
    let _ = safetensors::inspect(f, b.len() as u64);
}

fn onnx_file(s: &mut Scratch, b: &[u8]) {
    let f = s.file(b);
    let _ = onnx::inspect(f, b.len() as u64);
}

fn rule_yaml(_: &mut Scratch, b: &[u8]) {
    let t = text(b);
    let compiled = envdoctor::rules::compile::Compiler::new("fuzz.yaml", &t).compile_file(false);
    // The inline tests evaluate every rule: worth it on small files, too slow on whole packs.
    if let (Ok(rules), true) = (compiled, b.len() < 8192) {
        let set = envdoctor::rules::RuleSet::from_rules(rules);
        let _ = set.run_tests();
    }
}

thread_local! {
    static SHIPPED: Option<envdoctor::rules::RuleSet> = envdoctor::rules::RuleSet::shipped().ok();
    static BLOCKS: std::cell::RefCell<std::collections::HashMap<u64, Vec<(usize, usize)>>> =
        Default::default();
}

fn snapshot_json(_: &mut Scratch, b: &[u8]) {
    if let Ok(snap) = envdoctor::Snapshot::from_json_fast(&text(b), "fuzz.json") {
        SHIPPED.with(|set| {
            if let Some(set) = set {
                let limits = envdoctor::rules::EvalLimits {
                    per_rule: std::time::Duration::from_millis(200),
                    until: None,
                };
                let _ = set.check_within(&snap, limits);
            }
        });
    }
}

thread_local! {
    static SYMPTOMS: Option<(envdoctor::rules::RuleSet, envdoctor::diagnose::matcher::SymptomIndex)> =
        envdoctor::rules::RuleSet::shipped().ok().map(|set| {
            let index = envdoctor::diagnose::matcher::SymptomIndex::new(set.rules());
            (set, index)
        });
}

thread_local! {
    static CONFIRM_EVERY: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

fn diagnose_log(_: &mut Scratch, b: &[u8]) {
    SYMPTOMS.with(|s| {
        if let Some((set, index)) = s {
            if let Ok(scan) = envdoctor::diagnose::scan(b, index) {
                let facts = serde_json::json!({"pythons": [], "libraries": [], "gpus": []});
                // Confirming (rule evaluation over fixed facts, ~1.7 ms) runs on every 32nd
                // input: the log parser is the scan, and the names it extracts reach confirm.
                let n = CONFIRM_EVERY.with(|c| {
                    c.set(c.get().wrapping_add(1));
                    c.get()
                });
                if n % 32 == 0 {
                    let _ = envdoctor::diagnose::diagnose(
                        scan,
                        set.rules(),
                        &facts,
                        "fuzz.log",
                        "fuzz",
                    );
                }
            }
        }
    });
}

/// The project file (issue 30): `envdoctor.toml` and a pyproject's `[tool.envdoctor]` in any
/// spelling, through the parser and the check for the table.
fn config_toml(_: &mut Scratch, b: &[u8]) {
    let t = text(b);
    let _ = envdoctor::config::parse_file("envdoctor.toml", &t, false);
    if envdoctor::config::has_tool_table(&t) {
        let _ = envdoctor::config::parse_file("pyproject.toml", &t, true);
    }
}

/// The CUDA tools' version reader: `.rodata` located through the section table of a file that
/// claims to be ELF64 (every offset and size from the file), then the marker search.
fn tool_rodata(s: &mut Scratch, b: &[u8]) {
    s.put("/cuda/bin/nvcc", b);
    let root = Root::new(s.dir.path());
    let _ = envdoctor::probe::tools::tool_version(&root, Path::new("/cuda/bin/nvcc"));
    let _ = envdoctor::probe::tools::find_version(b);
}

/// A conda prefix's `conda-meta/*.json` record (conda's `PrefixRecord`), read as the lock
/// comparison reads it.
fn conda_meta(s: &mut Scratch, b: &[u8]) {
    s.put("/env/conda-meta/pkg-1.0-0.json", b);
    let root = Root::new(s.dir.path());
    let _ = envdoctor::probe::lock::conda_meta::records(&root, Path::new("/env"));
}

/// What a `pyproject.toml` declares (project dependencies, extras, dependency groups), read to
/// tell a stale lock.
fn pyproject_declared(_: &mut Scratch, b: &[u8]) {
    let _ = envdoctor::probe::lock::stale::declared(&text(b));
}

/// The serialized probe end to end: a pickle's globals (GLOBAL / STACK_GLOBAL, from the walker)
/// resolved against a small interpreter's `sys.path` on the scratch machine (a standard library
/// that is really there, a site-packages with one package whose source defines one class), as
/// `serialized::resolve` reads files: every `module.name` a hostile pickle names becomes path
/// components and a word search in a source file.
fn serialized(s: &mut Scratch, b: &[u8]) {
    use envdoctor::snapshot::python::{Python, SysPathEntry, SysPathOrigin};
    if !s.dir.path().join("py/site/pkg/__init__.py").exists() {
        s.put(
            "/py/lib/collections/__init__.py",
            b"class OrderedDict: pass\n",
        );
        s.put("/py/lib/pathlib.py", b"class Path: pass\n");
        s.put("/py/site/pkg/__init__.py", b"from .core import Model\n");
        s.put(
            "/py/site/pkg/core.py",
            b"class Model:\n    class Inner: pass\n",
        );
        s.put(
            "/py/site/pkg-1.0.dist-info/METADATA",
            b"Name: pkg\nVersion: 1.0\n",
        );
        s.put(
            "/py/site/pkg-1.0.dist-info/RECORD",
            b"pkg/__init__.py,,\npkg/core.py,,\n",
        );
        s.put("/proj/train.py", b"class Net: pass\n");
    }
    let entry = |path: &str, origin| SysPathEntry {
        path: path.into(),
        origin,
        exists: true,
    };
    let py = Python {
        sys_path: vec![
            entry("/py/lib", SysPathOrigin::Stdlib),
            entry("/py/site", SysPathOrigin::Site),
        ],
        ..Default::default()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(200);
    let (scan, stop) = pickle::scan_with(b, Some(deadline));
    let refs = references::from_scans(&[scan], stop);
    let root = Root::new(s.dir.path());
    let mut r =
        envdoctor::probe::serialized::resolve::Resolver::new(&root, &py, Some(Path::new("/proj")));
    let here = [PathBuf::from("/proj")];
    for g in refs.globals.iter().take(64) {
        let _ = r.check(g, &here);
    }
}

/// The escaping layer (issue 30): what comes out holds no control character and no raw
/// Markdown/HTML opener, whatever went in (a violation panics, which the engine reports).
fn escape(_: &mut Scratch, b: &[u8]) {
    use envdoctor::report::escape as e;
    let t = text(b);
    let line = e::one_line(&t);
    assert!(
        !line.chars().any(|c| c.is_control() && c != '\t'),
        "{line:?}"
    );
    let term = e::terminal(&t, true);
    assert!(
        !term
            .chars()
            .any(|c| c.is_control() && !"\n\t\x1b".contains(c)),
        "{term:?}"
    );
    let md = e::md_text(&t);
    assert!(!md.contains('\n'), "{md:?}");
    // What md_text promises: `<`, backtick, `*`, `[`, `|` always escaped; `&` where an entity
    // could follow (a letter, digit or `#`); `_` unless between two letters or digits.
    let chars: Vec<(usize, char)> = md.char_indices().collect();
    for (k, &(i, c)) in chars.iter().enumerate() {
        let next = chars.get(k + 1).map(|&(_, n)| n);
        let prev = k.checked_sub(1).map(|j| chars[j].1);
        let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric());
        let must = match c {
            '<' | '`' | '*' | '[' | '|' => true,
            '&' => next.is_some_and(|n| n.is_ascii_alphanumeric() || n == '#'),
            '_' => !(word(prev) && word(next)),
            _ => false,
        };
        if must {
            assert!(md[..i].ends_with('\\'), "unescaped {c:?} in {md:?}");
        }
    }
    let html = e::html(&t);
    assert!(!html.contains('<') && !html.contains('>'), "{html:?}");
    let code = e::md_code(&t);
    assert!(!code.contains('\n'), "{code:?}");
    let gh = e::gh_property(&t);
    assert!(
        !gh.contains('\n') && !gh.contains(',') && !gh.contains(':'),
        "{gh:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Structure-aware mutators.

/// The members of a zip, in order.
fn unzip(b: &[u8]) -> Option<Vec<(String, Vec<u8>)>> {
    let mut z = zip::ZipArchive::new(std::io::Cursor::new(b)).ok()?;
    let mut out = Vec::new();
    for i in 0..z.len() {
        let mut f = z.by_index(i).ok()?;
        let name = f.name().ok()?.to_string();
        let mut data = Vec::new();
        f.by_ref().take(4 << 20).read_to_end(&mut data).ok()?;
        out.push((name, data));
    }
    Some(out)
}

fn rezip(members: &[(String, Vec<u8>)], deflate: bool) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let method = if deflate {
        zip::CompressionMethod::Deflated
    } else {
        zip::CompressionMethod::Stored
    };
    let opts = zip::write::SimpleFileOptions::default().compression_method(method);
    for (name, data) in members {
        if w.start_file(name.as_str(), opts).is_err() {
            continue;
        }
        let _ = w.write_all(data);
    }
    w.finish().map(|c| c.into_inner()).unwrap_or_default()
}

/// Mutate one member of a zip (its bytes, or its name) and rebuild the archive, so CRCs and
/// the central directory stay valid and the member parser is reached.
fn zip_member(rng: &mut Rng, seed: &[u8], others: &[Vec<u8>], dict: &[&[u8]]) -> Vec<u8> {
    let Some(mut members) = unzip(seed) else {
        return havoc(rng, seed, others, dict);
    };
    if members.is_empty() {
        return havoc(rng, seed, others, dict);
    }
    let i = rng.below(members.len());
    if rng.chance(8) {
        let name = havoc(rng, members[i].0.as_bytes(), &[], dict);
        members[i].0 = String::from_utf8_lossy(&name).into_owned();
    } else {
        members[i].1 = havoc(rng, &members[i].1, &[], dict);
    }
    if rng.chance(10) {
        members.remove(rng.below(members.len()));
    }
    rezip(&members, rng.chance(4))
}

/// The (start, end) of each block of a LevelDB table (TensorFlow's `.index`): blocks lie end
/// to end from offset 0, each followed by a 1-byte type and a masked CRC32C of block + type.
fn table_blocks(b: &[u8]) -> Vec<(usize, usize)> {
    let mut blocks = Vec::new();
    let mut s = 0usize;
    let limit = b.len().saturating_sub(48);
    while s < limit {
        let start = s;
        let end = (start..limit.saturating_sub(4)).find(|&e| {
            b[e] == 0
                && tf_index::masked_crc32c(&b[start..=e])
                    == u32::from_le_bytes([b[e + 1], b[e + 2], b[e + 3], b[e + 4]])
        });
        let Some(e) = end else { break };
        blocks.push((start, e));
        s = e + 5;
    }
    blocks
}

/// Mutate inside one block of the table (same length) and recompute its checksum, so the
/// mutation reaches the block parser instead of the checksum test.
fn table_crc(rng: &mut Rng, seed: &[u8], others: &[Vec<u8>], dict: &[&[u8]]) -> Vec<u8> {
    // Block boundaries of a seed are found once (the search is quadratic).
    let key = seed.iter().fold(seed.len() as u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    });
    let blocks = BLOCKS.with(|c| {
        c.borrow_mut()
            .entry(key)
            .or_insert_with(|| table_blocks(seed))
            .clone()
    });
    if blocks.is_empty() {
        return havoc(rng, seed, others, dict);
    }
    let mut d = seed.to_vec();
    let (s, e) = blocks[rng.below(blocks.len())];
    let body = &d[s..e];
    let mut m = havoc(rng, body, &[], dict);
    m.resize(body.len(), 0);
    d[s..e].copy_from_slice(&m);
    let crc = tf_index::masked_crc32c(&d[s..=e]);
    d[e + 1..e + 5].copy_from_slice(&crc.to_le_bytes());
    d
}

// ---------------------------------------------------------------------------------------------
// Seeds.

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Files under `dirs` whose name satisfies `want`, at most `max` of them, each at most
/// `max_len` bytes, sorted (deterministic).
fn files(dirs: &[PathBuf], want: &dyn Fn(&str) -> bool, max: usize, max_len: u64) -> Vec<Vec<u8>> {
    let mut found = Vec::new();
    let mut stack: Vec<(PathBuf, usize)> = dirs.iter().map(|d| (d.clone(), 0)).collect();
    while let Some((d, depth)) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut entries: Vec<_> = rd.filter_map(Result::ok).collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let Ok(ft) = e.file_type() else { continue };
            let p = e.path();
            if ft.is_dir() && depth < 12 {
                stack.push((p, depth + 1));
            } else if ft.is_file()
                && want(&e.file_name().to_string_lossy())
                && e.metadata().is_ok_and(|m| m.len() <= max_len)
            {
                found.push(p);
            }
        }
    }
    found.sort();
    found.dedup();
    found
        .into_iter()
        .take(max)
        .filter_map(|p| std::fs::read(p).ok())
        .collect()
}

/// Real files of this machine's Python installs and of cached PyPI venvs (when present).
/// Directories named `name` under `dir`, at most `depth` levels down (sorted).
fn glob_dirs(dir: &Path, name: &str, depth: usize) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    let mut entries: Vec<_> = rd.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        if !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        if e.file_name() == name {
            out.push(e.path());
        } else if depth > 0 {
            out.extend(glob_dirs(&e.path(), name, depth - 1));
        }
    }
    out
}

fn python_dirs() -> Vec<PathBuf> {
    let mut d = vec![
        repo("fixtures/machines"),
        PathBuf::from("/usr/lib/python3/dist-packages"),
    ];
    if let Some(h) = std::env::var_os("HOME") {
        d.push(Path::new(&h).join(".cache/envdoctor-pypi/venvs"));
    }
    d
}

fn ckpt() -> Vec<PathBuf> {
    vec![repo("fixtures/checkpoints")]
}

fn members_of(zips: &[Vec<u8>], suffix: &str) -> Vec<Vec<u8>> {
    zips.iter()
        .filter_map(|z| unzip(z))
        .flatten()
        .filter(|(n, _)| n.ends_with(suffix))
        .map(|(_, d)| d)
        .collect()
}

/// The seeds of a target.
/// Each rule of a rule file as a file of its own (`rules:` and that one item).
fn single_rules(file: &[u8]) -> Vec<Vec<u8>> {
    let text = String::from_utf8_lossy(file);
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    for line in text.lines() {
        if line.starts_with("  - id:") {
            if let Some(c) = cur.take() {
                out.push(c.into_bytes());
            }
            cur = Some("rules:\n".to_string());
        }
        if let Some(c) = cur.as_mut() {
            c.push_str(line);
            c.push('\n');
        }
    }
    out.extend(cur.map(String::into_bytes));
    out
}

/// A small real cache, written by the real `ldconfig` over two of this machine's directories
/// (a few entries: the full /etc/ld.so.cache makes each execution re-parse 40 KB).
fn small_ld_cache() -> Vec<Vec<u8>> {
    let Ok(dir) = tempfile::tempdir() else {
        return Vec::new();
    };
    let libs = dir.path().join("libs");
    let conf = dir.path().join("ld.so.conf");
    let cache = dir.path().join("ld.so.cache");
    let _ = std::fs::create_dir_all(&libs);
    for name in ["libz.so.1", "libffi.so.8", "libbz2.so.1.0"] {
        let from = Path::new("/usr/lib/x86_64-linux-gnu").join(name);
        if let Ok(real) = std::fs::canonicalize(&from) {
            let _ = std::fs::copy(&real, libs.join(real.file_name().unwrap_or_default()));
        }
    }
    let _ = std::fs::write(&conf, format!("{}\n", libs.display()));
    let ran = std::process::Command::new("/sbin/ldconfig")
        .arg("-C")
        .arg(&cache)
        .arg("-f")
        .arg(&conf)
        .arg("-X")
        .status()
        .is_ok_and(|s| s.success());
    if !ran {
        return Vec::new();
    }
    std::fs::read(&cache).map(|b| vec![b]).unwrap_or_default()
}

pub fn seeds(name: &str) -> Vec<Vec<u8>> {
    let mut s = match name {
        "metadata" => files(
            &python_dirs(),
            &|n| n == "METADATA" || n == "PKG-INFO",
            400,
            32 << 10,
        ),
        "requires-txt" => files(&python_dirs(), &|n| n == "requires.txt", 200, 16 << 10),
        "uv-lock" => files(&[repo("fixtures/locks")], &|n| n == "uv.lock", 10, 1 << 20),
        "pylock-toml" => files(
            &[repo("fixtures/locks")],
            &|n| n == "pylock.toml",
            10,
            1 << 20,
        ),
        "poetry-lock" => files(
            &[repo("fixtures/locks")],
            &|n| n == "poetry.lock",
            10,
            1 << 20,
        ),
        "pdm-lock" => files(&[repo("fixtures/locks")], &|n| n == "pdm.lock", 10, 1 << 20),
        "pipfile-lock" => files(
            &[repo("fixtures/locks")],
            &|n| n == "Pipfile.lock",
            10,
            1 << 20,
        ),
        "requirements-txt" => files(
            &[repo("fixtures/locks")],
            &|n| n.starts_with("requirements") && n.ends_with(".txt"),
            10,
            1 << 20,
        ),
        "conda-environment" => files(
            &[repo("fixtures/locks")],
            &|n| n == "environment.yml",
            10,
            1 << 20,
        ),
        "conda-lock" => files(&[repo("fixtures/locks")], &|n| n == "conda-lock.yml", 10, 1 << 20),
        "pixi-lock" => files(&[repo("fixtures/locks")], &|n| n == "pixi.lock", 10, 1 << 20),
        "record" => files(&python_dirs(), &|n| n == "RECORD", 100, 16 << 10),
        "pth" => files(&python_dirs(), &|n| n.ends_with(".pth"), 100, 1 << 16),
        "pyvenv-cfg" => files(&python_dirs(), &|n| n == "pyvenv.cfg", 100, 1 << 16),
        "vscode-settings" => files(&[repo("fixtures")], &|n| n == "settings.json", 50, 1 << 20),
        "pycharm-xml" => files(
            &[repo("fixtures")],
            &|n| n == "misc.xml" || n == "jdk.table.xml",
            50,
            1 << 20,
        ),
        "kernelspec" => files(&[repo("fixtures")], &|n| n == "kernel.json", 50, 1 << 20),
        "ld-so-cache" => {
            let mut v = files(
                &[PathBuf::from("/etc")],
                &|n| n == "ld.so.cache",
                1,
                8 << 20,
            );
            v.extend(files(
                &[repo("fixtures")],
                &|n| n == "ld.so.cache",
                20,
                8 << 20,
            ));
            v.extend(small_ld_cache());
            v
        }
        "elf" => {
            let mut v = files(
                &[PathBuf::from("/usr/lib/x86_64-linux-gnu")],
                &|n| {
                    n.starts_with("libz.so")
                        || n.starts_with("libffi.so")
                        || n.starts_with("libbz2.so")
                },
                6,
                512 << 10,
            );
            v.extend(files(
                &[repo("fixtures/machines")],
                &|n| n.contains(".so"),
                20,
                512 << 10,
            ));
            v
        }
        "tf-index" => files(&ckpt(), &|n| n.ends_with(".index"), 20, 1 << 20),
        "tf-state" => files(&ckpt(), &|n| n == "checkpoint", 20, 1 << 16),
        "saved-model-pb" => files(&ckpt(), &|n| n.ends_with(".pb"), 20, 4 << 20),
        "keras-zip" => files(&ckpt(), &|n| n.ends_with(".keras"), 20, 4 << 20),
        "hdf5" => files(&ckpt(), &|n| n.ends_with(".h5"), 20, 4 << 20),
        "torch-zip" => files(
            &ckpt(),
            &|n| n.ends_with(".pt") || n.ends_with(".pth") || n.ends_with(".bin"),
            20,
            4 << 20,
        ),
        "torch-pickle" => {
            let zips = files(
                &ckpt(),
                &|n| n.ends_with(".pt") || n.ends_with(".bin"),
                20,
                4 << 20,
            );
            let mut v = members_of(&zips, ".pkl");
            v.extend(zips.into_iter().filter(|z| !z.starts_with(b"PK")));
            v
        }
        "pickle" => files(
            &[repo("fixtures/serialized")],
            &|n| n.ends_with(".pkl") || n.ends_with(".joblib"),
            20,
            4 << 20,
        ),
        "safetensors" => files(&ckpt(), &|n| n.ends_with(".safetensors"), 20, 4 << 20),
        "onnx" => files(&ckpt(), &|n| n.ends_with(".onnx"), 20, 4 << 20),
        "rule-yaml" => {
            // One rule per seed (whole pack files are 10-40 KB and spend each execution
            // re-parsing rules that were not mutated), plus the two smallest files whole.
            let whole = files(&[repo("rules")], &|n| n.ends_with(".yaml"), 20, 4 << 20);
            let mut v: Vec<Vec<u8>> = whole.iter().flat_map(|f| single_rules(f)).collect();
            let mut small = whole;
            small.sort_by_key(|f| f.len());
            v.extend(small.into_iter().take(2));
            v
        }
        "diagnose-log" => files(
            &[repo("fixtures/logs")],
            &|n| n.ends_with(".log") || n.ends_with(".txt"),
            40,
            1 << 20,
        ),
        "snapshot-json" => files(
            &[repo("fixtures/snapshots")],
            &|n| n.ends_with(".json"),
            30,
            4 << 20,
        ),
        "config-toml" => {
            let mut v = files(
                &[repo(".")],
                &|n| n == "envdoctor.toml" || n == "pyproject.toml",
                20,
                1 << 16,
            );
            v.push(b"[tool]\nenvdoctor.fail-on = \"never\"\n".to_vec());
            v.push(b"[ tool.envdoctor ]\nrules = [\"r\"]\nignore = [\"a:b\"]\n[tool.envdoctor.params.x]\nn = 1\n".to_vec());
            v.push(b"rules = [\"a\", \"b\"]\nfail-on = \"warning\"\n[severity]\nx = \"info\"\n".to_vec());
            v
        }
        "tool-rodata" => {
            // Real CUDA 13 tools from NVIDIA's wheel (bin2c carries the version string, the
            // device query does not), then the small ELF files of the elf target.
            let mut v = files(
                &python_dirs(),
                &|n| n == "bin2c" || n == "__nvcc_device_query",
                4,
                256 << 10,
            );
            v.extend(seeds("elf").into_iter().take(6));
            v
        }
        "conda-meta" => {
            // conda's own record of the fixture's python (every field conda writes, `files`
            // and `paths_data` included); every conda-meta record under fixtures/ besides.
            let first = repo("fixtures/machines/site-conda/opt/conda/conda-meta");
            let mut dirs = glob_dirs(&repo("fixtures"), "conda-meta", 6);
            dirs.retain(|d| *d != first);
            dirs.insert(0, first);
            files(&dirs, &|n| n.ends_with(".json"), 20, 1 << 20)
        }
        "pyproject" => files(
            &[repo("fixtures"), repo(".")],
            &|n| n == "pyproject.toml",
            30,
            1 << 16,
        ),
        "serialized" => seeds("pickle"),
        "escape" => vec![
            b"\n<!--\n@octocat </details><img src=x> \x1b]0;t\x07 ``x`` \xe2\x80\xae [l](u) | c |\r\n::error::X".to_vec(),
            b"/home/u/proj/.venv/bin/python".to_vec(),
            b"- 1. # > ~ & \\ `".to_vec(),
        ],
        _ => Vec::new(),
    };
    if name == "requires-txt" {
        s.push(
            b"idna\n\n[gpu]\nfoo.*\n\n[:python_version < \"3.8\"]\nimportlib-metadata\n".to_vec(),
        );
    }
    if name == "metadata" {
        s.push(b"Metadata-Version: 2.1\nName: x\nVersion: 1.0\nRequires-Dist: foo.*\nRequires-Dist: a ; (python_version >= \"3\")\n".to_vec());
    }
    s
}

const LOCK_DICT: &[&[u8]] = &[
    b"[[package]]\n",
    b"[[packages]]\n",
    b"version = 1\n",
    b"lock-version = \"1.0\"\n",
    b"source = { editable = \".\" }\n",
    b"source = { virtual = \".\" }\n",
    b"dependencies = [{ name = \"six\", marker = \"python_version < '3'\", extra = [\"x\"] }]\n",
    b"marker = \"((((((\"\n",
    b"markers = { main = \"sys_platform == 'linux'\" }\n",
    b"\"_meta\": {\"pipfile-spec\": 6}",
    b"-r r.txt\n",
    b"-c c.txt\n",
    b"-e ./x#egg=x\n",
    b" --hash=sha256:00\n",
    b"\\\n",
    b"dependencies:\n  - pip:\n    - -r r.txt\n",
    b"- conda: https://conda.anaconda.org/conda-forge/linux-64/x-1-0.conda\n",
    b"- pypi: ./x\n",
    b"  platform: linux-64\n  manager: pip\n",
    b"version: 6\n",
    b"&a [*a, *a, *a]\n",
    b"numpy[version='>=1',build=*]\n",
    b"; extra == 'a'",
    b"==1.0+cu124",
];

const TEXT_DICT: &[&[u8]] = &[
    b"\n",
    b" ",
    b"(",
    b")",
    b"[",
    b"]",
    b"{",
    b"}",
    b"\"",
    b"'",
    b",",
    b";",
    b":",
    b"=",
    b"==",
    b">=",
    b"<",
    b"~=",
    b".*",
    b"@",
    b"\\",
    b"#",
    b"//",
    b"/*",
    b"*/",
    b"\xff",
    b"\xc3\xa9",
    b"\0",
];

const META_DICT: &[&[u8]] = &[
    b"Requires-Dist: ",
    b"Name: ",
    b"Version: ",
    b"Requires-Python: ",
    b"extra == \"x\"",
    b"; python_version < \"3.8\"",
    b" and ",
    b" or ",
    b"platform_machine",
    b"foo.*",
    b"(",
    b")",
    b"\n",
    b"\n\n",
    b"1.0.dev0+local",
    b"[",
    b"]",
    b" @ https://x/y.whl",
    b"\xff",
];

const YAML_DICT: &[&[u8]] = &[
    b"rules:\n",
    b"  - id: ",
    b"when:",
    b"any_in: ",
    b"all_in: ",
    b"as: ",
    b"where:",
    b"fact: ",
    b"equals: ",
    b"cast: ",
    b"pep440: ",
    b"tests:",
    b"expect: fire",
    b"{{",
    b"}}",
    b"&a ",
    b"*a",
    b"- ",
    b": ",
    b"[",
    b"]",
    b"{",
    b"}",
    b"!!binary ",
    b"<<: ",
    b"\n",
    b"    ",
];

const BIN_DICT: &[&[u8]] = &[
    b"\x80\x02",
    b"\x89HDF\r\n\x1a\n",
    b"PK\x03\x04",
    b"\x7fELF",
    b"ld.so-1.7.0",
    b"glibc-ld.so.cache1.1",
    b"\x00\x00\x00\x00",
    b"\xff\xff\xff\xff",
    b"{\"",
    b"__metadata__",
    b"}",
    b"data.pkl",
    b"archive/",
    b"ctorch._utils\n_rebuild_tensor_v2\n",
    b"q\x00",
];

/// Every target.
pub fn all() -> Vec<Target> {
    vec![
        Target {
            name: "metadata",
            parser: "dist_info::parse_headers + requires::parse (pep508_rs)",
            dict: META_DICT,
            mutate: None,
            run: metadata,
        },
        Target {
            name: "uv-lock",
            parser: "lock::uv::read (toml, pep508 markers)",
            dict: LOCK_DICT,
            mutate: None,
            run: uv_lock,
        },
        Target {
            name: "pylock-toml",
            parser: "lock::pylock::read (PEP 751)",
            dict: LOCK_DICT,
            mutate: None,
            run: pylock_toml,
        },
        Target {
            name: "poetry-lock",
            parser: "lock::poetry::read",
            dict: LOCK_DICT,
            mutate: None,
            run: poetry_lock,
        },
        Target {
            name: "pdm-lock",
            parser: "lock::pdm::read",
            dict: LOCK_DICT,
            mutate: None,
            run: pdm_lock,
        },
        Target {
            name: "pipfile-lock",
            parser: "lock::pipfile::read (JSON)",
            dict: LOCK_DICT,
            mutate: None,
            run: pipfile_lock,
        },
        Target {
            name: "requirements-txt",
            parser: "lock::requirements::read (pip's file grammar, -r/-c includes)",
            dict: LOCK_DICT,
            mutate: None,
            run: requirements_txt,
        },
        Target {
            name: "conda-environment",
            parser:
                "lock::conda::read_environment + match_spec (YAML, conda match specs, pip section)",
            dict: LOCK_DICT,
            mutate: None,
            run: conda_environment,
        },
        Target {
            name: "conda-lock",
            parser: "lock::conda::read_conda_lock (YAML)",
            dict: LOCK_DICT,
            mutate: None,
            run: conda_lock,
        },
        Target {
            name: "pixi-lock",
            parser: "lock::pixi::read (YAML, v4-v7)",
            dict: LOCK_DICT,
            mutate: None,
            run: pixi_lock,
        },
        Target {
            name: "requires-txt",
            parser: "dist_info::egg_requires + requires::parse",
            dict: META_DICT,
            mutate: None,
            run: requires_txt,
        },
        Target {
            name: "record",
            parser: "load::record_lists (RECORD)",
            dict: TEXT_DICT,
            mutate: None,
            run: record,
        },
        Target {
            name: "pth",
            parser: "pth::parse",
            dict: TEXT_DICT,
            mutate: None,
            run: pth_file,
        },
        Target {
            name: "pyvenv-cfg",
            parser: "site::parse_pyvenv_cfg",
            dict: TEXT_DICT,
            mutate: None,
            run: pyvenv_cfg,
        },
        Target {
            name: "vscode-settings",
            parser: "ide::vscode (JSON with comments)",
            dict: TEXT_DICT,
            mutate: None,
            run: vscode_settings,
        },
        Target {
            name: "pycharm-xml",
            parser: "ide::pycharm (misc.xml, jdk.table.xml)",
            dict: TEXT_DICT,
            mutate: None,
            run: pycharm_xml,
        },
        Target {
            name: "kernelspec",
            parser: "ide::jupyter (kernel.json)",
            dict: TEXT_DICT,
            mutate: None,
            run: kernelspec,
        },
        Target {
            name: "ld-so-cache",
            parser: "ldcache::parse",
            dict: BIN_DICT,
            mutate: None,
            run: ld_so_cache,
        },
        Target {
            name: "elf",
            parser: "elf::read, elf::read_with_symbols",
            dict: BIN_DICT,
            mutate: None,
            run: elf_file,
        },
        Target {
            name: "tf-index",
            parser: "tf_index::read_table/read_bundle (CRCs recomputed)",
            dict: BIN_DICT,
            mutate: Some(table_crc),
            run: tf_index_file,
        },
        Target {
            name: "tf-state",
            parser: "tf_ckpt::parse_state",
            dict: TEXT_DICT,
            mutate: None,
            run: tf_state,
        },
        Target {
            name: "saved-model-pb",
            parser: "saved_model::parse_saved_model_pb, keras_metadata_classes",
            dict: BIN_DICT,
            mutate: None,
            run: saved_model_pb,
        },
        Target {
            name: "keras-zip",
            parser: "keras::inspect_v3 (zip rebuilt)",
            dict: TEXT_DICT,
            mutate: Some(zip_member),
            run: keras_zip,
        },
        Target {
            name: "hdf5",
            parser: "hdf5::find_superblock/root_attributes, keras::inspect_h5",
            dict: BIN_DICT,
            mutate: None,
            run: hdf5_file,
        },
        Target {
            name: "torch-zip",
            parser: "torch::inspect_zip (zip rebuilt)",
            dict: BIN_DICT,
            mutate: Some(zip_member),
            run: torch_zip,
        },
        Target {
            name: "torch-pickle",
            parser: "torch::scan, torch::inspect_legacy",
            dict: BIN_DICT,
            mutate: None,
            run: torch_pickle,
        },
        Target {
            name: "pickle",
            parser: "pickle::scan_with, references::from_scans",
            dict: BIN_DICT,
            mutate: None,
            run: pickle_walk,
        },
        Target {
            name: "safetensors",
            parser: "safetensors::inspect",
            dict: BIN_DICT,
            mutate: None,
            run: safetensors_file,
        },
        Target {
            name: "onnx",
            parser: "onnx::inspect",
            dict: BIN_DICT,
            mutate: None,
            run: onnx_file,
        },
        Target {
            name: "rule-yaml",
            parser: "rules::compile + inline tests",
            dict: YAML_DICT,
            mutate: None,
            run: rule_yaml,
        },
        Target {
            name: "diagnose-log",
            parser: "diagnose::scan (reader, ANSI strip, symptom index) + diagnose::diagnose",
            dict: TEXT_DICT,
            mutate: None,
            run: diagnose_log,
        },
        Target {
            name: "snapshot-json",
            parser: "Snapshot::from_json_fast + shipped rules",
            dict: TEXT_DICT,
            mutate: None,
            run: snapshot_json,
        },
        Target {
            name: "config-toml",
            parser: "config::parse_file + has_tool_table (toml)",
            dict: TEXT_DICT,
            mutate: None,
            run: config_toml,
        },
        Target {
            name: "tool-rodata",
            parser: "tools::tool_version (ELF64 section table, .rodata) + find_version",
            dict: BIN_DICT,
            mutate: None,
            run: tool_rodata,
        },
        Target {
            name: "conda-meta",
            parser: "lock::conda_meta::records (conda-meta/*.json)",
            dict: TEXT_DICT,
            mutate: None,
            run: conda_meta,
        },
        Target {
            name: "pyproject",
            parser: "lock::stale::declared (pyproject.toml dependencies and groups)",
            dict: LOCK_DICT,
            mutate: None,
            run: pyproject_declared,
        },
        Target {
            name: "serialized",
            parser:
                "pickle walker + serialized::resolve::Resolver::check (globals against sys.path)",
            dict: BIN_DICT,
            mutate: None,
            run: serialized,
        },
        Target {
            name: "escape",
            parser: "report::escape (every output kind's escaping)",
            dict: TEXT_DICT,
            mutate: None,
            run: escape,
        },
    ]
}
