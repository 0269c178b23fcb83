//! Hostile strings through every output (issue 30, defects 4, 5 and the SARIF URIs): a
//! committed `.vscode/settings.json`, a kernelspec and a checkpoint file name carry HTML, a
//! Markdown comment, @mentions, backticks, terminal escapes, bidi overrides and
//! `\n::error::` lines, emphasis, strikethrough, math, entities, images and a link reference;
//! one test runs the corpus through every output: `check` in each format, `report`,
//! `compare`, `diagnose` (the corpus in a log and in its file name) and `run` (in the job's
//! command line and output); each must keep them inert. The Markdown is parsed with a real
//! CommonMark parser (pulldown-cmark, GitHub's extensions and math).

use crate::common::cli;
use crate::common::machine::{repo, Machine};
use pulldown_cmark::{Event, Options, Parser};
use serde_json::Value;
use std::path::Path;

/// Every attack, joined into one path component's worth of text (no `/`).
const HOSTILE: &str = "\n<!--\n@octocat </details><img src=x onerror=alert(1)> \u{1b}]0;pwned\u{7}\u{1b}[2J ``x`` \u{202e}rtl \u{85}c1 [l](http://evil) | cell |\r\n::error::X _em_ *em* ~~gone~~ $x^2$ &lt;b&gt; ![i](http://evil/i.png) [r]: http://evil\n# h";

fn machine() -> Machine {
    let mut m = Machine::new();
    for (from, to) in [
        ("fixtures/machines/py-ide/usr", "/usr"),
        ("fixtures/machines/py-ide/home/u/venvs", "/home/u/venvs"),
    ] {
        crate::common::machine::copy_tree(&repo(from), &m.path(to));
    }
    m.env("HOME", "/home/u");
    let settings = serde_json::json!({ "python.defaultInterpreterPath": format!("/opt/{HOSTILE}/bin/python") });
    m.write("/home/u/proj/.vscode/settings.json", &settings.to_string());
    let kernel = serde_json::json!({
        "argv": [format!("/srv/{HOSTILE}/bin/python"), "-m", "ipykernel_launcher"],
        "display_name": HOSTILE,
        "language": "python",
    });
    m.write(
        "/usr/share/jupyter/kernels/evil/kernel.json",
        &kernel.to_string(),
    );
    let ckpt = repo("fixtures/checkpoints/torch_state_dict.pt");
    let name = format!("bad{}.pt", HOSTILE.replace('/', "_"));
    std::fs::copy(ckpt, m.path("/home/u/proj").join(name)).unwrap();
    m
}

fn run(m: &Machine, args: &[&str]) -> String {
    let mut c = cli::plain();
    c.env_clear().env("NO_COLOR", "1");
    for (k, v) in &m.env {
        c.env(k, v);
    }
    let out = c.args(args).output().unwrap();
    let code = out.status.code();
    assert!(
        matches!(code, Some(0 | 1)),
        "{args:?}: {code:?} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

fn check(m: &Machine, format: &str) -> String {
    let root = m.root().to_str().unwrap();
    run(
        m,
        &[
            "check",
            "--no-load",
            "-v",
            "--root",
            root,
            "--project",
            "/home/u/proj",
            "--format",
            format,
        ],
    )
}

/// No control character but newline (and tab); no line a GitHub runner would take for a
/// workflow command unless it is one of ours.
fn assert_inert_text(what: &str, s: &str, commands_ok: bool) {
    for (i, c) in s.char_indices() {
        let bad = (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
        assert!(
            !bad,
            "{what}: raw {c:?} at {i}: {}",
            &s[i.saturating_sub(60)..i]
        );
    }
    for l in s.lines() {
        if l.starts_with("::") {
            assert!(commands_ok, "{what}: a workflow command line: {l}");
            assert!(!l.starts_with("::error::X"), "{what}: injected: {l}");
        }
    }
}

/// The Markdown has no HTML but envdoctor's own folding tags, no mention and no injected
/// link; the hostile text is there, as text.
fn assert_inert_markdown(what: &str, md: &str) {
    assert_inert_text(what, md, false);
    let allowed = [
        "<details>",
        "</details>",
        "<summary>",
        "</summary>",
        "<code>",
        "</code>",
        "<br>",
        "<sub>",
        "</sub>",
    ];
    let (mut text, mut code) = (String::new(), String::new());
    let opts = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_MATH;
    for ev in Parser::new_ext(md, opts) {
        match ev {
            Event::InlineMath(m) | Event::DisplayMath(m) => panic!("{what}: math {m:?}"),
            Event::Start(
                t @ (pulldown_cmark::Tag::Emphasis
                | pulldown_cmark::Tag::Strikethrough
                | pulldown_cmark::Tag::Image { .. }),
            ) => panic!("{what}: {t:?} from a value"),
            Event::Html(h) | Event::InlineHtml(h) => {
                let mut rest = h.trim();
                // An HTML block may hold several of our tags and the text between them.
                while let Some(start) = rest.find('<') {
                    let end = rest[start..]
                        .find('>')
                        .map(|e| start + e + 1)
                        .unwrap_or(rest.len());
                    let tag = &rest[start..end];
                    assert!(allowed.contains(&tag), "{what}: HTML {tag:?} in {h:?}");
                    rest = &rest[end..];
                }
            }
            Event::Start(pulldown_cmark::Tag::Link { dest_url, .. }) => {
                assert!(
                    !dest_url.contains("evil"),
                    "{what}: injected link {dest_url}"
                );
            }
            // GitHub makes no mention inside code.
            Event::Text(t) => text.push_str(&t),
            Event::Code(t) => code.push_str(&t),
            _ => {}
        }
    }
    assert!(!text.contains("@octocat"), "{what}: a mention");
    assert!(
        text.contains("octocat") || code.contains("octocat"),
        "{what}: the hostile path is shown: {md}"
    );
}

/// The corpus through every output format, in one test (issue 30: "the hostile-strings corpus
/// passes through every output format").
#[test]
fn the_hostile_corpus_stays_inert_in_every_output_format() {
    let m = machine();
    every_check_format(&m);
    report_and_compare(&m);
    diagnose_and_run(&m);
}

fn every_check_format(m: &Machine) {
    let text = check(m, "text");
    assert_inert_text("text", &text, false);
    assert!(
        text.contains("\\x1b]0;pwned\\x07"),
        "shown, escaped: {text}"
    );
    assert_inert_markdown("markdown", &check(m, "markdown"));
    let gh = check(m, "github");
    assert_inert_text("github", &gh, true);
    assert!(
        gh.lines()
            .all(|l| l.starts_with("::") || l.starts_with("envdoctor: ")),
        "{gh}"
    );
    let json: Value = serde_json::from_str(&check(m, "json")).unwrap();
    assert!(json.to_string().contains("octocat"), "JSON keeps the facts");
    let sarif: Value = serde_json::from_str(&check(m, "sarif")).unwrap();
    let mut uris = Vec::new();
    collect_uris(&sarif, &mut uris);
    for u in &uris {
        assert!(
            u.parse::<url_check::Uri>().is_ok(),
            "SARIF URI {u:?} is not RFC 3986"
        );
    }
    let junit = check(m, "junit");
    roxmltree::Document::parse(&junit).expect("well-formed JUnit XML");
    let prom = check(m, "prometheus");
    assert_inert_text("prometheus", &prom, false);
    for l in prom
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        assert!(
            l.rsplit_once(' ')
                .is_some_and(|(_, v)| v.parse::<f64>().is_ok()),
            "{l}"
        );
    }
}

fn collect_uris(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(o) => {
            for (k, x) in o {
                match x {
                    Value::String(s) if k == "uri" => out.push(s.clone()),
                    _ => collect_uris(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_uris(x, out)),
        _ => {}
    }
}

/// RFC 3986's character set for a URI reference (no parser in the tree checks it strictly).
mod url_check {
    pub struct Uri;
    impl std::str::FromStr for Uri {
        type Err = char;
        fn from_str(s: &str) -> Result<Uri, char> {
            const OK: &str = "-._~:/?#@!$&'()*+,;=%";
            match s
                .chars()
                .find(|c| !(c.is_ascii_alphanumeric() || OK.contains(*c)))
            {
                Some(c) => Err(c),
                None => Ok(Uri),
            }
        }
    }
}

fn report_and_compare(m: &Machine) {
    let root = m.root().to_str().unwrap();
    let report = run(
        m,
        &[
            "report",
            "--no-load",
            "--root",
            root,
            "--project",
            "/home/u/proj",
        ],
    );
    assert_inert_markdown("report", &report);
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.json");
    let out = run(
        m,
        &[
            "snapshot",
            "--no-load",
            "--root",
            root,
            "--project",
            "/home/u/proj",
        ],
    );
    std::fs::write(&a, &out).unwrap();
    // B: the same machine under a hostile host name, its job interpreter moved.
    let mut b: Value = serde_json::from_str(&out).unwrap();
    b["host"]["hostname"] = Value::from(format!("node{HOSTILE}"));
    let b_path = dir.path().join("b.json");
    std::fs::write(&b_path, b.to_string()).unwrap();
    let (a, b) = (a.to_str().unwrap(), b_path.to_str().unwrap());
    assert_inert_text("compare text", &run(m, &["compare", a, b]), false);
    assert_inert_markdown(
        "compare markdown",
        &run(m, &["compare", a, b, "--format", "markdown"]),
    );
    serde_json::from_str::<Value>(&run(m, &["compare", a, b, "--format", "json"])).unwrap();
    let _ = Path::new(a);
}

/// A failure's log whose lines (and file name) carry the corpus: the library named in the
/// loader's error, the interpreter's path and a package version.
fn hostile_log() -> String {
    format!(
        "Traceback (most recent call last):\n  File \"/srv/{h}/train.py\", line 1, in <module>\n\
         ImportError: libcudnn.so.9{h}: cannot open shared object file: No such file or directory\n\
         RuntimeError: jaxlib version 0.4.14{h} is newer than and incompatible with jax version 0.4.6. \
         Please update your jax and/or jaxlib packages.\n",
        h = HOSTILE.replace('\n', " ")
    ) + HOSTILE
}

fn diagnose_and_run(m: &Machine) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir
        .path()
        .join(format!("job{}.log", HOSTILE.replace('/', "_")));
    std::fs::write(&log, hostile_log()).unwrap();
    let log = log.to_str().unwrap();
    let root = m.root().to_str().unwrap();
    let base = ["diagnose", log, "--no-load", "--root", root];
    let text = run(m, &base);
    assert_inert_text("diagnose text", &text, false);
    assert!(text.contains("pwned"), "the log's text is shown: {text}");
    let md = run(m, &[&base[..], &["--format", "markdown"]].concat());
    assert_inert_markdown("diagnose markdown", &md);
    let json: Value = serde_json::from_str(&run(m, &[&base[..], &["--format", "json"]].concat()))
        .expect("diagnose JSON");
    assert!(
        json.to_string().contains("octocat"),
        "JSON keeps the log's text"
    );
    // run: the job prints the log on stderr and fails; its own output passes as it is (it is
    // the job's), envdoctor's diagnosis after it is inert, in text and in Markdown.
    for format in ["text", "markdown"] {
        let mut c = cli::plain();
        c.env_clear().env("NO_COLOR", "1");
        for (k, v) in &m.env {
            c.env(k, v);
        }
        let out = c
            .args(["run", "--no-load", "--root", root, "--format", format, "--"])
            .args(["sh", "-c", "cat \"$1\" >&2; exit 1", HOSTILE, log])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8(out.stderr).expect("UTF-8");
        let job = hostile_log();
        assert!(
            err.starts_with(&job),
            "run {format}: the job's output first, untouched"
        );
        let ours = &err[job.len()..];
        assert_inert_text(&format!("run {format}"), ours, false);
        assert!(ours.contains("octocat"), "run {format}: {ours}");
        if format == "markdown" {
            let md = &ours[ours.find("## ").expect("the Markdown diagnosis")..];
            assert_inert_markdown("run markdown", md);
        }
    }
}
