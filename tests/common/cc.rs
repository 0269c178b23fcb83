//! Test helper: build real shared libraries and executables with `cc`.
//!
//! Use it from an integration test with `use crate::common::cc;`. Example:
//! ```ignore
//! let lib = cc::Lib::new("libcudnn.so.8")          // the soname
//!     .returns("cudnnGetVersion", 8902)            // `int cudnnGetVersion(void) { return 8902; }`
//!     .rpath("$ORIGIN/../deps")                    // DT_RPATH (--disable-new-dtags)
//!     .needs(&dep_dir, "cublas")                   // DT_NEEDED via -L dep_dir -lcublas
//!     .build(&dir.join("libcudnn.so.8.9.2"));      // the file written
//! ```
//! `cc::symlink(target, link)` makes relative links; `cc::Exe` builds a tiny executable that
//! calls `dlopen` on its arguments (to ask the real loader), and `cc::real_loader_picks` runs
//! one under `LD_DEBUG=libs` and returns the path the real `ld.so` opened for a name.
#![allow(dead_code)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Run a command, panicking with its output when it fails (tests only).
pub fn run(cmd: &mut Command) -> std::process::Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// True when a C compiler is available.
pub fn have_cc() -> bool {
    Command::new("cc").arg("--version").output().is_ok()
}

/// A shared library to build.
#[derive(Clone, Debug, Default)]
pub struct Lib {
    soname: Option<String>,
    funcs: Vec<(String, i64)>,
    body: String,
    rpath: Vec<String>,
    runpath: Vec<String>,
    needs: Vec<(PathBuf, String)>,
    version_script: Option<String>,
    versioned_funcs: Vec<(String, String, i64)>,
    m32: bool,
    extra_args: Vec<OsString>,
}

impl Lib {
    /// A library whose DT_SONAME is `soname`.
    pub fn new(soname: &str) -> Self {
        Lib {
            soname: Some(soname.to_string()),
            ..Default::default()
        }
    }

    /// A library without DT_SONAME.
    pub fn without_soname() -> Self {
        Lib::default()
    }

    /// Export `int name(void) { return value; }`.
    pub fn returns(mut self, name: &str, value: i64) -> Self {
        self.funcs.push((name.to_string(), value));
        self
    }

    /// Add raw C code (e.g. a constructor that crashes).
    pub fn c(mut self, code: &str) -> Self {
        self.body.push_str(code);
        self.body.push('\n');
        self
    }

    /// A DT_RPATH entry (linked with `--disable-new-dtags`).
    pub fn rpath(mut self, dir: &str) -> Self {
        self.rpath.push(dir.to_string());
        self
    }

    /// A DT_RUNPATH entry (linked with `--enable-new-dtags`).
    pub fn runpath(mut self, dir: &str) -> Self {
        self.runpath.push(dir.to_string());
        self
    }

    /// DT_NEEDED on `lib<name>.so` found in `dir` at link time (`-L dir -l name`): the entry
    /// recorded is that library's soname.
    pub fn needs(mut self, dir: &Path, name: &str) -> Self {
        self.needs.push((dir.to_path_buf(), name.to_string()));
        self
    }

    /// Define symbol versions: `versions` like `["GLIBCXX_3.4.29", "GLIBCXX_3.4.30"]` become a
    /// version script chain, and `func@@VERSION` returning `value` is exported in each.
    pub fn defines_versions(mut self, versions: &[&str]) -> Self {
        let mut script = String::new();
        let mut prev: Option<&str> = None;
        for (i, v) in versions.iter().enumerate() {
            let f = format!("envdoctor_v{i}");
            script.push_str(&format!("{v} {{ global: {f}; }}"));
            match prev {
                Some(p) => script.push_str(&format!(" {p};\n")),
                None => script.push_str(";\n"),
            }
            self.versioned_funcs.push((f, v.to_string(), i as i64));
            prev = Some(v);
        }
        self.version_script = Some(script);
        self
    }

    /// Build a 32-bit library (`-m32`); callers should skip when [`have_m32`] is false.
    pub fn m32(mut self) -> Self {
        self.m32 = true;
        self
    }

    /// Extra compiler/linker arguments.
    pub fn arg(mut self, a: impl Into<OsString>) -> Self {
        self.extra_args.push(a.into());
        self
    }

    /// Compile into `out` (its parent is created). Returns `out`.
    pub fn build(&self, out: &Path) -> PathBuf {
        let dir = out.parent().expect("output has a parent");
        std::fs::create_dir_all(dir).expect("create output dir");
        let src_dir = tempfile::tempdir().expect("tempdir");
        let src = src_dir.path().join("lib.c");
        let mut code = String::new();
        for (name, value) in &self.funcs {
            code.push_str(&format!("int {name}(void) {{ return {value}; }}\n"));
        }
        for (name, _, value) in &self.versioned_funcs {
            code.push_str(&format!("int {name}(void) {{ return {value}; }}\n"));
        }
        code.push_str(&self.body);
        if code.is_empty() {
            code.push_str("int envdoctor_placeholder(void) { return 0; }\n");
        }
        std::fs::write(&src, code).expect("write source");
        let mut cmd = Command::new("cc");
        cmd.arg("-shared").arg("-fPIC").arg("-o").arg(out).arg(&src);
        if self.m32 {
            cmd.arg("-m32");
        }
        if let Some(s) = &self.soname {
            cmd.arg(format!("-Wl,-soname,{s}"));
        }
        if !self.rpath.is_empty() {
            cmd.arg("-Wl,--disable-new-dtags")
                .arg(format!("-Wl,-rpath,{}", self.rpath.join(":")));
        }
        if !self.runpath.is_empty() {
            cmd.arg("-Wl,--enable-new-dtags")
                .arg(format!("-Wl,-rpath,{}", self.runpath.join(":")));
        }
        if let Some(script) = &self.version_script {
            let p = src_dir.path().join("vers.map");
            std::fs::write(&p, script).expect("write version script");
            cmd.arg(format!("-Wl,--version-script={}", p.display()));
        }
        if !self.needs.is_empty() {
            // Keep DT_NEEDED even though no symbol of the dependency is used.
            cmd.arg("-Wl,--no-as-needed");
        }
        for (d, n) in &self.needs {
            cmd.arg("-L").arg(d).arg(format!("-l{n}"));
        }
        cmd.args(&self.extra_args);
        run(&mut cmd);
        out.to_path_buf()
    }
}

/// True when `cc -m32` can link a shared library here.
pub fn have_m32() -> bool {
    let d = tempfile::tempdir().expect("tempdir");
    let src = d.path().join("t.c");
    std::fs::write(&src, "int f(void){return 1;}").expect("write");
    Command::new("cc")
        .args(["-m32", "-shared", "-fPIC", "-o"])
        .arg(d.path().join("t.so"))
        .arg(&src)
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// A relative-or-absolute symlink `link -> target` (parent dirs created).
pub fn symlink(target: impl AsRef<Path>, link: impl AsRef<Path>) {
    if let Some(p) = link.as_ref().parent() {
        std::fs::create_dir_all(p).expect("create link dir");
    }
    std::os::unix::fs::symlink(target.as_ref(), link.as_ref()).expect("symlink");
}

/// A small executable.
#[derive(Clone, Debug, Default)]
pub struct Exe {
    rpath: Vec<String>,
    runpath: Vec<String>,
    needs: Vec<(PathBuf, String)>,
}

impl Exe {
    /// An executable that `dlopen`s each argument (RTLD_NOW) and prints `ok NAME` or
    /// `fail NAME: dlerror` per line.
    pub fn dlopener() -> Self {
        Exe::default()
    }
    /// DT_RPATH of the executable.
    pub fn rpath(mut self, dir: &str) -> Self {
        self.rpath.push(dir.to_string());
        self
    }
    /// DT_RUNPATH of the executable.
    pub fn runpath(mut self, dir: &str) -> Self {
        self.runpath.push(dir.to_string());
        self
    }
    /// Link against `lib<name>.so` in `dir` (DT_NEEDED).
    pub fn needs(mut self, dir: &Path, name: &str) -> Self {
        self.needs.push((dir.to_path_buf(), name.to_string()));
        self
    }
    /// Compile into `out`.
    pub fn build(&self, out: &Path) -> PathBuf {
        let src_dir = tempfile::tempdir().expect("tempdir");
        let src = src_dir.path().join("main.c");
        std::fs::write(
            &src,
            r#"#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    void *h = dlopen(argv[i], RTLD_NOW);
    if (h) printf("ok %s\n", argv[i]); else printf("fail %s: %s\n", argv[i], dlerror());
  }
  return 0;
}
"#,
        )
        .expect("write main.c");
        if let Some(p) = out.parent() {
            std::fs::create_dir_all(p).expect("create exe dir");
        }
        let mut cmd = Command::new("cc");
        cmd.arg("-o").arg(out).arg(&src);
        if !self.rpath.is_empty() {
            cmd.arg("-Wl,--disable-new-dtags")
                .arg(format!("-Wl,-rpath,{}", self.rpath.join(":")));
        }
        if !self.runpath.is_empty() {
            cmd.arg("-Wl,--enable-new-dtags")
                .arg(format!("-Wl,-rpath,{}", self.runpath.join(":")));
        }
        if !self.needs.is_empty() {
            // Keep DT_NEEDED even though no symbol of the dependency is used.
            cmd.arg("-Wl,--no-as-needed");
        }
        for (d, n) in &self.needs {
            cmd.arg("-L").arg(d).arg(format!("-l{n}"));
        }
        cmd.arg("-ldl");
        run(&mut cmd);
        out.to_path_buf()
    }
}

/// What the real loader did for one run: `calling init: PATH` / `trying file=` lines.
#[derive(Clone, Debug, Default)]
pub struct LdDebug {
    /// Full `LD_DEBUG=libs` output.
    pub log: String,
    /// The program's stdout.
    pub stdout: String,
}

impl LdDebug {
    /// The file `ld.so` opened for `name` (`find library=NAME` … `trying file=PATH` until the
    /// next `find library`; the last `trying file` before success). `None` when not found.
    pub fn picked(&self, name: &str) -> Option<PathBuf> {
        let mut in_block = false;
        let mut last: Option<String> = None;
        for line in self.log.lines() {
            let l = line
                .split_once(':')
                .map(|(_, r)| r.trim())
                .unwrap_or(line.trim());
            if let Some(rest) = l.strip_prefix("find library=") {
                if in_block {
                    break;
                }
                let lib = rest.split([' ', ';']).next().unwrap_or("");
                in_block = lib == name;
                last = None;
                continue;
            }
            if !in_block {
                continue;
            }
            if let Some(f) = l.strip_prefix("trying file=") {
                last = Some(f.to_string());
            }
            if l.starts_with("calling init:") || l.starts_with("file=") {
                break;
            }
        }
        // A success is confirmed by the program's stdout or by the library being mapped.
        let path = last?;
        self.log
            .lines()
            .any(|l| l.contains(&format!("file={path} ")) || l.contains(&format!("init: {path}")))
            .then(|| PathBuf::from(path))
    }

    /// Names the loader failed to find.
    pub fn failed(&self) -> bool {
        self.stdout.contains("fail ")
    }
}

/// Run `exe args…` with `LD_DEBUG=libs` and the given environment (others cleared except PATH).
pub fn ld_debug(exe: &Path, args: &[&str], env: &[(&str, &str)], cwd: Option<&Path>) -> LdDebug {
    let mut cmd = Command::new(exe);
    cmd.args(args).env_clear().env("LD_DEBUG", "libs");
    if let Ok(p) = std::env::var("PATH") {
        cmd.env("PATH", p);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    if let Some(d) = cwd {
        cmd.current_dir(d);
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {exe:?}: {e}"));
    LdDebug {
        log: String::from_utf8_lossy(&out.stderr).into_owned(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
    }
}

/// The path the real loader opens for `name` when `exe` dlopens it.
pub fn real_loader_picks(exe: &Path, name: &str, env: &[(&str, &str)]) -> Option<PathBuf> {
    ld_debug(exe, &[name], env, None).picked(name)
}
