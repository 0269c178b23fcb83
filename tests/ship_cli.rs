//! CLI conventions of the shipped binary: completions that the real shells load and complete
//! with, a man page that `man`/`groff` render, `--version` naming the rule pack and target,
//! `-q`/`-v`, and `--color` under NO_COLOR, CLICOLOR, CLICOLOR_FORCE, FORCE_COLOR and TERM=dumb
//! on a pipe and on a real terminal (a pty from util-linux `script`).
//!
//! A shell or tool that is not installed skips its test with a message (CI installs zsh, fish
//! and groff).

use crate::common::cli;
use std::path::{Path, PathBuf};
use std::process::Command as Proc;

fn have(tool: &str) -> bool {
    let found = which(tool).is_some();
    if !found {
        eprintln!("SKIPPED: `{tool}` is not installed");
    }
    found
}

fn which(tool: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(tool))
            .find(|f| f.is_file())
    })
}

fn write_completion(dir: &Path, shell: &str) -> PathBuf {
    let text = cli::stdout_ok(cli::cmd().args(["completions", shell]));
    let p = dir.join(format!("envdoctor.{shell}"));
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn bash_completion_parses_and_completes_subcommands_and_flags() {
    if !have("bash") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let f = write_completion(dir.path(), "bash");
    let st = Proc::new("bash").arg("-n").arg(&f).status().unwrap();
    assert!(st.success(), "bash -n rejects the completion script");
    // Load it and ask it what follows `envdoctor che` and `envdoctor check --fa`.
    let script = format!(
        "source {}\n\
         COMP_WORDS=(envdoctor che); COMP_CWORD=1; COMP_LINE='envdoctor che'; COMP_POINT=13\n\
         _envdoctor envdoctor che envdoctor; echo \"1:${{COMPREPLY[*]}}\"\n\
         COMP_WORDS=(envdoctor check --fa); COMP_CWORD=2; COMP_LINE='envdoctor check --fa'; COMP_POINT=20\n\
         _envdoctor envdoctor --fa check; echo \"2:${{COMPREPLY[*]}}\"\n\
         complete -p envdoctor\n",
        f.display()
    );
    let out = Proc::new("bash").arg("-c").arg(script).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("1:check"), "{text}");
    assert!(text.contains("2:--fail-on"), "{text}");
    assert!(text.contains("-F _envdoctor envdoctor"), "{text}");
}

#[test]
fn zsh_completion_parses_and_loads() {
    if !have("zsh") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let f = write_completion(dir.path(), "zsh");
    let st = Proc::new("zsh").arg("-n").arg(&f).status().unwrap();
    assert!(st.success(), "zsh -n rejects the completion script");
    // Loaded under compinit it defines the completion function and registers it.
    let script = format!(
        "autoload -U compinit && compinit -u -D && source {} && \
         (( $+functions[_envdoctor] )) && echo defined && print -r -- ${{_comps[envdoctor]}}",
        f.display()
    );
    let out = Proc::new("zsh")
        .args(["-f", "-c", &script])
        .env("HOME", dir.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("defined") && text.contains("_envdoctor"),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn fish_completion_parses_and_completes() {
    if !have("fish") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let f = write_completion(dir.path(), "fish");
    let st = Proc::new("fish")
        .arg("--no-execute")
        .arg(&f)
        .status()
        .unwrap();
    assert!(
        st.success(),
        "fish --no-execute rejects the completion script"
    );
    let script = format!(
        "source {}; complete -C 'envdoctor che'; complete -C 'envdoctor check --fail-on '",
        f.display()
    );
    let out = Proc::new("fish")
        .args(["--no-config", "-c", &script])
        .env("HOME", dir.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().any(|l| l.starts_with("check")), "{text}");
    for level in ["error", "warning", "never"] {
        assert!(
            text.lines().any(|l| l.starts_with(level)),
            "{level}: {text}"
        );
    }
}

#[test]
fn unknown_shell_is_exit_2() {
    let out = cli::cmd().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn man_page_renders_with_every_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("envdoctor.1");
    std::fs::write(&page, cli::stdout_ok(cli::cmd().arg("man"))).unwrap();
    if have("groff") {
        // -ww: every warning; -z: no output, only diagnostics.
        let out = Proc::new("groff")
            .args(["-man", "-Tutf8", "-ww", "-z"])
            .arg(&page)
            .output()
            .unwrap();
        assert!(out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.trim().is_empty(), "groff warnings: {err}");
    }
    if have("man") {
        let out = Proc::new("man")
            .arg("-l")
            .arg(&page)
            .env("MANPAGER", "cat")
            .env("MANWIDTH", "100")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        for want in [
            "envdoctor",
            "check",
            "snapshot",
            "compare",
            "completions",
            "--color",
        ] {
            assert!(text.contains(want), "{want}: {text}");
        }
        assert!(
            !text.contains("__load-child"),
            "hidden commands stay hidden"
        );
        // One page: the commands are listed in it, not as envdoctor-check(1) pages that
        // nothing installs.
        assert!(!text.contains("envdoctor-check(1)"), "{text}");
        let commands = text.split("COMMANDS").nth(1).expect("a COMMANDS section");
        for c in ["envdoctor check", "envdoctor report", "envdoctor explain"] {
            assert!(commands.contains(c), "{c}: {commands}");
        }
        assert!(commands.contains("envdoctor COMMAND --help"), "{commands}");
    }
}

#[test]
fn version_names_the_rule_pack_and_target() {
    let v = cli::stdout_ok(cli::cmd().arg("--version"));
    let list = cli::stdout_ok(cli::cmd().args(["rules", "list"]));
    let count: usize = list
        .lines()
        .last()
        .and_then(|l| l.strip_suffix(" rules"))
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        v.starts_with(&format!(
            "envdoctor {} (rule pack: {count} rules, sha256 ",
            env!("CARGO_PKG_VERSION")
        )),
        "{v}"
    );
    // The hash is SHA-256 over each rule file's name and contents (NUL after each), in name
    // order: recompute it from rules/ with Python's hashlib.
    let py = "import hashlib,os,sys\n\
              d=sys.argv[1]; h=hashlib.sha256()\n\
              for n in sorted(f for f in os.listdir(d) if f.endswith(('.yaml','.yml'))):\n\
              \x20   h.update(n.encode()+b'\\0'+open(os.path.join(d,n),'rb').read()+b'\\0')\n\
              print(h.hexdigest())";
    if let Ok(out) = Proc::new("python3")
        .args(["-c", py])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("rules"))
        .output()
    {
        let hex = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert_eq!(hex.len(), 64, "{}", String::from_utf8_lossy(&out.stderr));
        assert!(
            v.contains(&format!("sha256 {}", &hex[..16])),
            "{v} vs {hex}"
        );
    }
    let target = format!("{}-unknown-linux", std::env::consts::ARCH);
    assert!(v.contains(&format!("; target {target}")), "{v}");
}

/// A saved snapshot with one error finding (a checkpoint that needs weights_only=False).
fn failing_snapshot(dir: &Path) -> PathBuf {
    let snap = serde_json::json!({
        "schema_version": 1, "envdoctor_version": "0.1.0",
        "pythons": [{"path": "/opt/venv/bin/python", "exists": true, "kind": "venv", "sources": [],
            "include_system_site_packages": false,
            "packages": [{"name": "torch", "version": "2.6.0", "version_valid": true,
                "location": "/opt/venv/lib/python3.11/site-packages",
                "metadata": "/opt/venv/lib/python3.11/site-packages/torch-2.6.0.dist-info/METADATA"}]}],
        "checkpoints": [{"path": "/data/run1/last.pt", "format": "torch-zip",
            "torch": {"zip": true, "globals": ["__main__.TrainConfig"],
                "unsafe_globals": ["__main__.TrainConfig"], "needs_weights_only_false": true,
                "storage_count": 2}}]
    });
    let p = dir.join("snap.json");
    std::fs::write(&p, serde_json::to_string(&snap).unwrap()).unwrap();
    p
}

#[test]
fn quiet_is_the_verdict_line_and_verbose_shows_what_rules_read() {
    let dir = tempfile::tempdir().unwrap();
    let snap = failing_snapshot(dir.path());
    let run = |flag: Option<&str>| {
        let mut c = cli::cmd();
        c.current_dir(dir.path())
            .args(["check", "--from"])
            .arg(&snap);
        if let Some(f) = flag {
            c.arg(f);
        }
        let out = c.output().unwrap();
        assert_eq!(out.status.code(), Some(1));
        String::from_utf8(out.stdout).unwrap()
    };
    let full = run(None);
    let quiet = run(Some("-q"));
    assert_eq!(quiet.lines().count(), 1, "{quiet}");
    assert!(quiet.starts_with("FAIL: 1 error"), "{quiet}");
    assert_eq!(full.lines().last(), quiet.lines().next());
    let verbose = run(Some("--verbose"));
    // -v expands the summary and adds the facts section; every finding line of the plain run
    // is still there.
    let findings = full.split_once("\nErrors").map_or("", |(_, f)| f);
    for line in findings.lines().filter(|l| !l.starts_with("FAIL")) {
        assert!(verbose.contains(line), "{line:?} missing from\n{verbose}");
    }
    assert!(verbose.ends_with(&quiet));
    // Bounded by what the findings used: the one rule that fired, with the fact that decided
    // it; no quiet rule, no absent fact.
    assert!(
        verbose.contains("Facts looked at by the rules that fired (1 of "),
        "{verbose}"
    );
    assert!(
        verbose.contains(
            "  ckpt-torch-needs-weights-only-false for checkpoints[/data/run1/last.pt]\n"
        ),
        "{verbose}"
    );
    assert!(
        verbose.contains("checkpoints[/data/run1/last.pt].torch.needs_weights_only_false = true"),
        "{verbose}"
    );
    assert!(!verbose.contains("(absent)"), "{verbose}");
    let facts = verbose.split("Facts looked at").nth(1).unwrap();
    assert!(facts.lines().count() < 20, "{facts}");
    // -q and -v together make no sense.
    let out = cli::cmd()
        .args(["check", "-q", "-v", "--from"])
        .arg(&snap)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// `check -q --from SNAP` on a pipe with `env`; whether its output has an escape.
fn coloured_on_pipe(snap: &Path, args: &[&str], env: &[(&str, &str)]) -> bool {
    let mut c = cli::cmd();
    c.args(["check", "-q", "--from"]).arg(snap).args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    String::from_utf8_lossy(&out.stdout).contains('\u{1b}')
}

#[test]
fn colour_on_a_pipe_follows_the_flag_and_the_forcing_variables() {
    let dir = tempfile::tempdir().unwrap();
    let snap = failing_snapshot(dir.path());
    assert!(!coloured_on_pipe(&snap, &[], &[]));
    assert!(coloured_on_pipe(&snap, &["--color", "always"], &[]));
    assert!(coloured_on_pipe(
        &snap,
        &["--color=always"],
        &[("NO_COLOR", "1")]
    ));
    assert!(!coloured_on_pipe(
        &snap,
        &["--color", "never"],
        &[("FORCE_COLOR", "1")]
    ));
    assert!(coloured_on_pipe(&snap, &[], &[("FORCE_COLOR", "1")]));
    assert!(coloured_on_pipe(&snap, &[], &[("FORCE_COLOR", "3")]));
    assert!(!coloured_on_pipe(&snap, &[], &[("FORCE_COLOR", "0")]));
    assert!(!coloured_on_pipe(
        &snap,
        &[],
        &[("FORCE_COLOR", "1"), ("NO_COLOR", "1")]
    ));
    assert!(coloured_on_pipe(&snap, &[], &[("CLICOLOR_FORCE", "1")]));
    assert!(!coloured_on_pipe(
        &snap,
        &[],
        &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]
    ));
    // The flag goes before the subcommand too.
    let mut c = cli::cmd();
    c.args(["--color", "always", "check", "-q", "--from"])
        .arg(&snap);
    assert!(String::from_utf8_lossy(&c.output().unwrap().stdout).contains('\u{1b}'));
}

/// `check -q --from SNAP` on a pseudo-terminal (`script`), with `env`: whether coloured.
fn coloured_on_tty(snap: &Path, env: &[(&str, &str)]) -> Option<bool> {
    if which("script").is_none() {
        eprintln!("SKIPPED: `script` (util-linux) is not installed");
        return None;
    }
    let cmd = format!(
        "{} check -q --from {}",
        cli::bin().display(),
        snap.display()
    );
    let mut c = Proc::new("script");
    c.args(["-qec", &cmd, "/dev/null"]);
    for k in [
        "NO_COLOR",
        "CLICOLOR",
        "CLICOLOR_FORCE",
        "FORCE_COLOR",
        "CI",
    ] {
        c.env_remove(k);
    }
    c.env("TERM", "xterm-256color");
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("FAIL: 1 error"), "{text}");
    Some(text.contains('\u{1b}'))
}

#[test]
fn colour_on_a_terminal_unless_no_color_clicolor_0_or_term_dumb() {
    let dir = tempfile::tempdir().unwrap();
    let snap = failing_snapshot(dir.path());
    let Some(plain_tty) = coloured_on_tty(&snap, &[]) else {
        return;
    };
    assert!(plain_tty, "a terminal gets colour");
    assert_eq!(coloured_on_tty(&snap, &[("NO_COLOR", "1")]), Some(false));
    assert_eq!(coloured_on_tty(&snap, &[("NO_COLOR", "")]), Some(true));
    assert_eq!(coloured_on_tty(&snap, &[("CLICOLOR", "0")]), Some(false));
    assert_eq!(coloured_on_tty(&snap, &[("TERM", "dumb")]), Some(false));
    assert_eq!(
        coloured_on_tty(&snap, &[("TERM", "dumb"), ("CLICOLOR_FORCE", "1")]),
        Some(true)
    );
}

/// `report --help` has report's own examples and exit codes, and offers only the formats report
/// writes; check's help keeps its own.
#[test]
fn report_help_is_reports_own() {
    let help = cli::stdout_ok(cli::plain().args(["report", "--help"]));
    assert!(help.contains("envdoctor report > env.md"), "{help}");
    assert!(help.contains("it is a document, not a gate"), "{help}");
    assert!(!help.contains("a CI gate"), "check's examples: {help}");
    assert!(!help.contains("--fail-on warning"), "{help}");
    assert!(help.contains("[possible values: markdown, json]"), "{help}");
    assert!(help.contains("[default: markdown]"), "{help}");
    for refused in ["sarif", "junit", "prometheus", "github"] {
        assert!(!help.contains(refused), "{refused}: {help}");
    }
    let check = cli::stdout_ok(cli::plain().args(["check", "--help"]));
    assert!(check.contains("a CI gate"), "{check}");
    assert!(check.contains("sarif"), "{check}");
    // What --help offers is what report takes.
    let (code, _, err) = cli::output(cli::plain().args(["report", "--format", "sarif"]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("[possible values: markdown, json]"), "{err}");
}
