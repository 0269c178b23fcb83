//! Embeds the shipped rule pack (`rules/*.yaml`) into the binary: writes
//! `$OUT_DIR/shipped_rules.rs`, a list of `(file name, contents)` pairs, sorted by name. Also
//! sets, for `envdoctor --version`, `ENVDOCTOR_RULES_SHA256` (SHA-256 over every file's name and
//! contents, in that order) and `ENVDOCTOR_TARGET` (the target triple).

use sha2::{Digest, Sha256};
use std::path::Path;

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
}
