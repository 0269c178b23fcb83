//! Embeds the shipped rule pack (`rules/*.yaml`) into the binary: writes
//! `$OUT_DIR/shipped_rules.rs`, a list of `(file name, contents)` pairs, sorted by name, and
//! `SHIPPED_LEAN`, the same files with every rule's inline `tests:` block blanked (a third of the
//! YAML, read only by `rules test` and `rules lint`; the lines stay, so positions do not move). Also
//! sets, for `envdoctor --version`, `ENVDOCTOR_RULES_SHA256` (SHA-256 over every file's name and
//! contents, in that order) and `ENVDOCTOR_TARGET` (the target triple).

use sha2::{Digest, Sha256};
use std::path::Path;
use std::process::Command;

fn main() {
    // Read at run time, not `env!` at the build script's compile time: a build script binary
    // reused from another checkout (a moved or shared target directory) must still read this
    // checkout's rules.
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let dir = Path::new(&manifest).join("rules");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let mut out = String::from(
        "/// The shipped rule files: (name, YAML).\npub const SHIPPED: &[(&str, &str)] = &[\n",
    );
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
        let name = f
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        out.push_str(&format!(
            "    (\"rules/{name}\", include_str!({:?})),\n",
            f.display().to_string()
        ));
    }
    out.push_str("];\n");
    out.push_str(
        "/// The shipped rule files without their inline tests: (name, YAML).\npub const SHIPPED_LEAN: &[(&str, &str)] = &[\n",
    );
    for f in &files {
        let name = f
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let text = std::fs::read_to_string(f).expect("read a rule file");
        out.push_str(&format!(
            "    (\"rules/{name}\", {:?}),\n",
            blank_tests(&text)
        ));
    }
    out.push_str("];\n");
    let mut hash = Sha256::new();
    for f in &files {
        let name = f.file_name().map(|n| n.to_string_lossy().into_owned());
        hash.update(name.unwrap_or_default().as_bytes());
        hash.update([0]);
        hash.update(std::fs::read(f).expect("read a rule file"));
        hash.update([0]);
    }
    let hex: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    println!("cargo:rustc-env=ENVDOCTOR_RULES_SHA256={hex}");
    println!(
        "cargo:rustc-env=ENVDOCTOR_TARGET={}",
        std::env::var("TARGET").unwrap_or_default()
    );
    let out_dir = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    // Written beside and renamed over: a target directory copied with hard links (`cp -al`, a
    // second worktree) then gets its own file instead of rewriting the one it shares.
    let dest = Path::new(&out_dir).join("shipped_rules.rs");
    let tmp = Path::new(&out_dir).join("shipped_rules.rs.tmp");
    std::fs::write(&tmp, out).expect("write shipped_rules.rs");
    std::fs::rename(&tmp, &dest).expect("rename shipped_rules.rs into place");
    link_libgcc_statically(Path::new(&out_dir));
}

/// `text` with each `tests:` block (the key's line, and every following line that is blank or
/// indented deeper, or a `- ` item at the key's own indentation) replaced by an empty line.
fn blank_tests(text: &str) -> String {
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut out = String::with_capacity(text.len());
    let mut block: Option<usize> = None;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        if let Some(ind) = block {
            let inside = body.trim().is_empty()
                || indent(body) > ind
                || (indent(body) == ind && body.trim_start().starts_with("- "));
            if inside {
                out.push_str(&line[body.len()..]);
                continue;
            }
            block = None;
        }
        let t = body.trim_start();
        let key = t.strip_prefix("tests:").map(str::trim);
        if key.is_some_and(|rest| rest.is_empty() || rest.starts_with('#')) {
            block = Some(indent(body));
            out.push_str(&line[body.len()..]);
            continue;
        }
        out.push_str(line);
    }
    out
}

/// Rust's standard library asks for `-lgcc_s` on `*-linux-gnu`, so a binary linked by `cc`
/// needs `libgcc_s.so.1` at start-up, and `ld.so` looks for it in `LD_LIBRARY_PATH` first:
/// the job's (say `$CONDA_PREFIX/lib`) would be mapped into envdoctor and into every load
/// child, its constructor run before any deadline, and a library probed in the load child would
/// find that one already loaded whatever its own RPATH says. Rust has no stable switch for a
/// static libgcc short of `crt-static` (a static glibc, which cannot `dlopen` faithfully), so
/// `-lgcc_s` is answered from `$OUT_DIR/static-libgcc/libgcc_s.so`: a linker script naming the
/// compiler's own `libgcc_eh.a` (the same unwinder, linked in, as `gcc -static-libgcc` does).
///
/// Only for a native build linked by the default `cc`: a configured linker (the release's
/// `maturin --zig`, which already replaces `-lgcc_s` with zig's static libunwind) or a cross
/// build is left alone, as is a compiler without `libgcc_eh.a`.
fn link_libgcc_statically(out_dir: &Path) {
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    let target = var("TARGET");
    if !target.ends_with("-linux-gnu") || target != var("HOST") || !var("RUSTC_LINKER").is_empty() {
        return;
    }
    let Ok(out) = Command::new("cc")
        .arg("-print-file-name=libgcc_eh.a")
        .output()
    else {
        return;
    };
    let eh = String::from_utf8_lossy(&out.stdout).trim().to_string();
    // Not found, cc answers the bare name.
    if !out.status.success() || !Path::new(&eh).is_absolute() || !Path::new(&eh).is_file() {
        return;
    }
    let dir = out_dir.join("static-libgcc");
    std::fs::create_dir_all(&dir).expect("create $OUT_DIR/static-libgcc");
    let script = format!(
        "/* envdoctor's build.rs: -lgcc_s is libgcc's unwinder, linked in. */\nINPUT({eh})\n"
    );
    std::fs::write(dir.join("libgcc_s.so"), script).expect("write the libgcc_s linker script");
    println!("cargo:rustc-link-search=native={}", dir.display());
}
