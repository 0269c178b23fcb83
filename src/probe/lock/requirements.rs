//! `requirements*.txt` and constraints files, as pip reads them: lines joined at a trailing
//! `\`, comments from ` #`, one requirement per line (PEP 508, a direct URL, or `-e` an
//! editable path/URL with `#egg=`), `--hash` options after it, and the file options `-r`/
//! `--requirement` and `-c`/`--constraint` (read relative to the file, at most
//! [`MAX_DEPTH`] deep, a cycle read once), `-i`/`--index-url`, `--extra-index-url`,
//! `-f`/`--find-links`, `--no-index`. A requirement whose marker does not hold for the target
//! is left out; `name==V` (or `===V`) is a pin, anything else is kept as a requirement the
//! installed version must meet.

use super::model::{normalize, Entry, Locked, Src, Target};
use pep508_rs::VersionOrUrl;

/// How deep `-r`/`-c` includes are followed.
pub const MAX_DEPTH: usize = 8;

/// Most files read for one requirements file, itself included: a cycle is read once, but
/// distinct names for one file (`a/r.txt`, `a/a/r.txt` through a symlink `a -> .`) are not a
/// cycle, and k includes per file would read k^MAX_DEPTH of them.
pub const MAX_FILES: usize = 64;

/// Reads an included file: its name as written and the including file's path in, the file's
/// path and text out.
pub type Include<'a> = dyn FnMut(&str, &str) -> Result<(String, String), String> + 'a;

/// Read `text` (the requirements file `path`) for `target`; `include` reads `-r`/`-c` files.
pub fn read(text: &str, path: &str, target: &Target, include: &mut Include) -> Locked {
    let mut walk = Walk {
        target,
        include,
        out: Locked::default(),
        seen: vec![path.to_string()],
    };
    one(&mut walk, text, path, false, 0);
    walk.out
}

/// What the reading of one requirements file and its includes shares: the target, the reader of
/// includes, what is read so far and the files already read.
struct Walk<'a, 'b> {
    target: &'a Target,
    include: &'a mut Include<'b>,
    out: Locked,
    seen: Vec<String>,
}

/// Whether pip-compile wrote it (then `pip-sync` is its sync command).
pub fn by_pip_compile(text: &str) -> bool {
    text.lines()
        .take(10)
        .any(|l| l.starts_with('#') && l.contains("pip-compile"))
}

/// State carried from line to line of one file.
struct Ctx<'a> {
    path: &'a str,
    index: Option<String>,
    constraint: bool,
}

/// Read one file of the walk (`constraint`: reached through a `-c`; `depth`: how many includes in).
fn one(walk: &mut Walk, text: &str, path: &str, constraint: bool, depth: usize) {
    let mut ctx = Ctx {
        path,
        index: None,
        constraint,
    };
    for (line_no, line) in logical_lines(text) {
        let line = strip_comment(&line);
        if line.is_empty() {
            continue;
        }
        if line.starts_with('-') {
            let Some((opt, val)) = option(line) else {
                continue;
            };
            match opt {
                "-r" | "--requirement" | "-c" | "--constraint" => {
                    let c = constraint || opt == "-c" || opt == "--constraint";
                    if depth + 1 > MAX_DEPTH {
                        walk.out.warnings.push(format!(
                            "{path}:{line_no}: includes nested more than {MAX_DEPTH} deep; `{val}` is not read"
                        ));
                        continue;
                    }
                    if walk.seen.len() >= MAX_FILES {
                        walk.out.warnings.push(format!(
                            "{path}:{line_no}: more than {MAX_FILES} files included; `{val}` is not read"
                        ));
                        continue;
                    }
                    match (walk.include)(val, path) {
                        Ok((p, t)) if !walk.seen.contains(&p) => {
                            walk.seen.push(p.clone());
                            one(walk, &t, &p, c, depth + 1);
                        }
                        Ok(_) => {}
                        Err(e) => walk.out.warnings.push(format!("{path}:{line_no}: {e}")),
                    }
                }
                "-i" | "--index-url" => ctx.index = Some(val.to_string()),
                "-e" | "--editable" => editable(val, line_no, &ctx, &mut walk.out),
                _ => {}
            }
            continue;
        }
        requirement(line, line_no, &ctx, walk.target, &mut walk.out);
    }
}

/// `-e PATH#egg=name` / `-e git+URL#egg=name`: an editable entry when the name is known.
fn editable(val: &str, line: usize, ctx: &Ctx, out: &mut Locked) {
    let (loc, frag) = val.split_once('#').unwrap_or((val, ""));
    let name = frag
        .split('&')
        .find_map(|kv| kv.strip_prefix("egg="))
        .map(normalize);
    let Some(name) = name.filter(|n| !n.is_empty()) else {
        return;
    };
    let source = if loc.starts_with("git+") {
        Src::Git(loc.to_string())
    } else {
        Src::Editable(loc.to_string())
    };
    out.entries.push(Entry {
        name,
        line,
        source,
        file: Some(ctx.path.to_string()),
        constraint: ctx.constraint,
        ..Entry::default()
    });
}

fn requirement(line: &str, line_no: usize, ctx: &Ctx, target: &Target, out: &mut Locked) {
    // `--hash=…` and other per-requirement options follow the requirement.
    let req_text = match line.find(" --").or_else(|| line.find("\t--")) {
        Some(i) => line[..i].trim(),
        None => line,
    };
    let req = match crate::probe::python::requires::parse(req_text) {
        Ok(Some(r)) => r,
        Ok(None) => {
            out.warnings.push(format!(
                "{}:{line_no}: `{}` is not a requirement pip reads",
                ctx.path,
                short(req_text)
            ));
            return;
        }
        Err(e) => {
            out.warnings.push(format!("{}:{line_no}: {e}", ctx.path));
            return;
        }
    };
    if let Some(env) = &target.markers {
        if !req.evaluate_markers(env, &[]) {
            return;
        }
    }
    let mut e = Entry {
        name: normalize(req.name.as_ref()),
        line: line_no,
        file: Some(ctx.path.to_string()),
        constraint: ctx.constraint,
        source: Src::Index(ctx.index.clone()),
        ..Entry::default()
    };
    match &req.version_or_url {
        Some(VersionOrUrl::VersionSpecifier(specs)) => {
            let exact = (specs.len() == 1)
                .then(|| specs.iter().next())
                .flatten()
                .filter(|s| {
                    let op = s.operator().to_string();
                    (op == "==" || op == "===") && !s.to_string().ends_with(".*")
                });
            match exact {
                Some(s) => e.version = Some(s.version().to_string()),
                None => e.spec = Some(specs.to_string()),
            }
        }
        Some(VersionOrUrl::Url(u)) => {
            let url = u.given().map_or_else(|| u.to_string(), str::to_string);
            e.source = if url.starts_with("git+") {
                Src::Git(url)
            } else if let Some(p) = url.strip_prefix("file://") {
                Src::Path(p.to_string())
            } else {
                Src::Url(url)
            };
        }
        None => {}
    }
    out.entries.push(e);
}

fn short(s: &str) -> String {
    s.chars().take(80).collect()
}

/// `-r file`, `--requirement=file`, `-rfile` → (`-r`, `file`).
fn option(line: &str) -> Option<(&str, &str)> {
    let (opt, rest) = match line.split_once(|c: char| c == '=' || c.is_whitespace()) {
        Some((o, r)) => (o, r.trim()),
        None => (line, ""),
    };
    if opt.len() > 2 && !opt.starts_with("--") {
        // `-rfile`: a one-letter option and its value; the second character must be one
        // (a multi-byte character there is no option: `-é...`).
        let (o, v) = line.split_at_checked(2)?;
        return Some((o, v.trim()));
    }
    Some((opt, rest.split_whitespace().next().unwrap_or("")))
}

#[cfg(test)]
mod option_tests {
    /// Found by the fuzz smoke run: a multi-byte character after the dash panicked.
    #[test]
    fn a_multibyte_character_after_the_dash_is_no_option() {
        assert_eq!(super::option("-\u{fffd}find-links /opt/wheels"), None);
        assert_eq!(super::option("-rreqs.txt"), Some(("-r", "reqs.txt")));
    }
}

/// A comment starts at `#` at the start of a line or after whitespace (pip's rule).
fn strip_comment(line: &str) -> &str {
    let b = line.as_bytes();
    for i in 0..b.len() {
        if b[i] == b'#' && (i == 0 || b[i - 1].is_ascii_whitespace()) {
            return line[..i].trim();
        }
    }
    line.trim()
}

/// Lines with `\`-continuations joined, each with the number of its first physical line.
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut cur: Option<(usize, String)> = None;
    for (i, raw) in text.lines().enumerate() {
        let (start, mut acc) = cur.take().unwrap_or((i + 1, String::new()));
        match raw.strip_suffix('\\') {
            Some(head) => {
                acc.push_str(head);
                acc.push(' ');
                cur = Some((start, acc));
            }
            None => {
                acc.push_str(raw);
                out.push((start, acc));
            }
        }
    }
    if let Some(c) = cur {
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_include(_: &str, _: &str) -> Result<(String, String), String> {
        Err("no includes here".into())
    }

    #[test]
    fn the_real_pip_compile_output_with_hashes() {
        let text = include_str!("../../../fixtures/locks/pip-tools/requirements.txt");
        assert!(by_pip_compile(text));
        let l = read(
            text,
            "r.txt",
            &Target::linux(Some("3.11.7"), "x86_64"),
            &mut no_include,
        );
        assert!(l.warnings.is_empty(), "{:?}", l.warnings);
        let got = l.pins("-");
        assert_eq!(got, ["packaging 26.4", "six 1.17.0", "urllib3 2.8.0"]);
        let six = &l.entries[1];
        assert!(text
            .lines()
            .nth(six.line - 1)
            .unwrap()
            .starts_with("six==1.17.0"));
    }

    /// Found by the fuzzer (2026-11-27, `requirements-txt`, an input with 17 `-c` lines ran
    /// over 10 s): a file whose includes name it again under new names (a symlink `a -> .`
    /// makes `a/r.txt`, `a/a/r.txt`, … distinct paths of one file) read 17^8 files. Now at most
    /// MAX_FILES, said in a warning naming the file.
    #[test]
    fn includes_under_ever_new_names_stop_at_the_file_cap() {
        let text = format!("six==1.16.0\n{}", "-c a/r.txt\n".repeat(17));
        let mut n = 0;
        let mut inc = |_: &str, _: &str| -> Result<(String, String), String> {
            n += 1;
            Ok((format!("/p/a{n}/r.txt"), text.clone()))
        };
        let started = std::time::Instant::now();
        let l = read(
            &text,
            "/p/r.txt",
            &Target::linux(Some("3.11.7"), "x86_64"),
            &mut inc,
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        assert_eq!(n, MAX_FILES - 1);
        assert!(
            l.warnings
                .iter()
                .any(|w| w.contains("more than 64 files included") && w.contains("/r.txt")),
            "{:?}",
            l.warnings
        );
        assert!(l.entries.iter().any(|e| e.name == "six"));
    }

    #[test]
    fn options_includes_markers_urls_and_editables() {
        let main = "-i https://download.pytorch.org/whl/cu124\n--extra-index-url https://pypi.org/simple\n\
                    torch==2.6.0+cu124 \\\n    --hash=sha256:abc\n\
                    -r more.txt\n-c cons.txt\n-rloop.txt\n\
                    tomli==2.0.1 ; python_version < \"3.11\"\n\
                    numpy>=1.26 # comment\n\
                    demo @ https://example.com/demo-1.0-py3-none-any.whl\n\
                    -e ./libs/tool#egg=Tool_X\n-e .\nnot a req !!\n";
        let mut inc = |name: &str, from: &str| -> Result<(String, String), String> {
            match name {
                "more.txt" => Ok(("/p/more.txt".into(), "six==1.16.0\n-r main.txt\n".into())),
                "main.txt" => Ok((from.to_string(), String::new())),
                "cons.txt" => Ok(("/p/cons.txt".into(), "urllib3==1.26.20\n".into())),
                _ => Err(format!("{name}: no such file")),
            }
        };
        let l = read(
            main,
            "/p/main.txt",
            &Target::linux(Some("3.12.1"), "x86_64"),
            &mut inc,
        );
        type Row = (String, Option<String>, Option<String>, usize, bool);
        let got: Vec<Row> = l
            .entries
            .iter()
            .map(|e| {
                (
                    e.name.clone(),
                    e.version.clone(),
                    e.spec.clone(),
                    e.line,
                    e.constraint,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("torch".into(), Some("2.6.0+cu124".into()), None, 3, false),
                ("six".into(), Some("1.16.0".into()), None, 1, false),
                ("urllib3".into(), Some("1.26.20".into()), None, 1, true),
                ("numpy".into(), None, Some(">=1.26".into()), 9, false),
                ("demo".into(), None, None, 10, false),
                ("tool-x".into(), None, None, 11, false),
            ]
        );
        assert_eq!(
            l.entries[0].source,
            Src::Index(Some("https://download.pytorch.org/whl/cu124".into()))
        );
        assert_eq!(l.entries[1].file.as_deref(), Some("/p/more.txt"));
        assert!(matches!(&l.entries[4].source, Src::Url(u) if u.ends_with(".whl")));
        assert_eq!(l.entries[5].source, Src::Editable("./libs/tool".into()));
        assert_eq!(l.warnings.len(), 2, "{:?}", l.warnings);
        assert!(l.warnings.iter().any(|w| w.contains("loop.txt")));
        assert!(l.warnings.iter().any(|w| w.contains(":13:")));
    }
}
