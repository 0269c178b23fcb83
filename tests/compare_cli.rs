//! `envdoctor compare` end to end on snapshots of real fixture machines.
//!
//! - Role matching: the same fixture machine laid out under two users (`/home/alice`,
//!   `/home/bob`), one with a package changed: the interpreters line up by role and the only
//!   drift is that package; with nothing changed there is no drift (exit 0).
//! - A three-machine fleet with one outlier: the majority, the outlier, grouped both ways.
//! - Unmatched interpreters (machines with different interpreter sets) are listed.
//! - Volatile facts: two snapshots of one machine differ only in `collected_at`: exit 0, and 1
//!   with `--all`.
//! - Every bad input: missing, empty, truncated, not a snapshot, a directory, an older and a
//!   newer `schema_version`, one file only: exit 2 with a message naming the file; the same file
//!   twice: exit 0 with a note.
//! - The verdict hook through the library API, with a closure, on real snapshots.

use crate::common::cli;
use envdoctor::compare::{self, ChangeKind, CompareOptions, CompareReport, Rank, Verdict};
use envdoctor::Snapshot;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/machines")
        .join(name)
}

/// `envdoctor snapshot --root ROOT --project PROJECT -o OUT` with only HOME and PATH set.
fn snapshot_to(root: &Path, home: &str, out: &Path) {
    let o = cli::empty()
        .env("HOME", home)
        .env("PATH", format!("{home}/proj/.venv/bin:/usr/bin:/bin"))
        .args(["snapshot", "--no-load", "--root"])
        .arg(root)
        .args(["--project", &format!("{home}/proj"), "-o"])
        .arg(out)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Copy a fixture machine, moving `/home/u` to `/home/<user>` (directory and text inside files).
fn copy_machine(src: &Path, dst: &Path, user: &str) {
    fn walk(src: &Path, dst: &Path, user: &str) {
        std::fs::create_dir_all(dst).unwrap();
        for e in std::fs::read_dir(src).unwrap() {
            let e = e.unwrap();
            let name = e.file_name();
            let to_name = if src.ends_with("home") && name == "u" {
                user.into()
            } else {
                name.clone()
            };
            let (from, to) = (e.path(), dst.join(to_name));
            let ft = e.file_type().unwrap();
            if ft.is_symlink() {
                let t = std::fs::read_link(&from).unwrap();
                let t = t
                    .to_string_lossy()
                    .replace("/home/u/", &format!("/home/{user}/"));
                std::os::unix::fs::symlink(t, &to).unwrap();
            } else if ft.is_dir() {
                walk(&from, &to, user);
            } else {
                let bytes = std::fs::read(&from).unwrap();
                match String::from_utf8(bytes.clone()) {
                    Ok(t) => std::fs::write(&to, t.replace("/home/u/", &format!("/home/{user}/")))
                        .unwrap(),
                    Err(_) => std::fs::write(&to, bytes).unwrap(),
                }
                let mode = std::fs::metadata(&from).unwrap().permissions();
                std::fs::set_permissions(&to, mode).unwrap();
            }
        }
    }
    walk(src, dst, user);
}

/// Change the version of a dist-info in a venv's site-packages (rename + METADATA).
fn set_version(site: &Path, name: &str, from: &str, to: &str) {
    let old = site.join(format!("{name}-{from}.dist-info"));
    let new = site.join(format!("{name}-{to}.dist-info"));
    std::fs::rename(&old, &new).unwrap();
    let meta = new.join("METADATA");
    let t = std::fs::read_to_string(&meta).unwrap();
    std::fs::write(
        &meta,
        t.replace(&format!("Version: {from}"), &format!("Version: {to}")),
    )
    .unwrap();
}

fn compare_json(files: &[&Path], extra: &[&str]) -> (i32, CompareReport) {
    let o = cli::plain()
        .arg("compare")
        .args(files)
        .args(["--format", "json"])
        .args(extra)
        .output()
        .unwrap();
    let text = String::from_utf8(o.stdout).unwrap();
    let report: CompareReport = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("stdout is not clean JSON ({e}):\n{text}"));
    (o.status.code().unwrap_or(-1), report)
}

struct TwoHomes {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
}

/// site-venv-system under alice, bob (six 1.16.0 -> 1.17.0 in the project venv) and carol
/// (unchanged); snapshots a.json, b.json, c.json.
fn two_homes() -> TwoHomes {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    for user in ["alice", "bob", "carol"] {
        copy_machine(&fixture("site-venv-system"), &dir.join(user), user);
    }
    set_version(
        &dir.join("bob/home/bob/proj/.venv/lib/python3.10/site-packages"),
        "six",
        "1.16.0",
        "1.17.0",
    );
    for (user, file) in [("alice", "a.json"), ("bob", "b.json"), ("carol", "c.json")] {
        snapshot_to(&dir.join(user), &format!("/home/{user}"), &dir.join(file));
    }
    TwoHomes { _tmp: tmp, dir }
}

#[test]
fn interpreters_line_up_by_role_across_home_directories() {
    let t = two_homes();
    let (code, r) = compare_json(&[&t.dir.join("a.json"), &t.dir.join("b.json")], &[]);
    assert_eq!(code, 1);
    let labels: Vec<&str> = r.interpreters.iter().map(|g| g.label.as_str()).collect();
    assert!(labels.contains(&"project-venv:.venv"), "{labels:?}");
    for g in &r.interpreters {
        assert!(
            g.members.iter().all(|m| m.is_some()),
            "every interpreter matched: {g:?}"
        );
    }
    let venv = r
        .interpreters
        .iter()
        .find(|g| g.label == "project-venv:.venv")
        .unwrap();
    assert_eq!(
        venv.members,
        vec![
            Some("/home/alice/proj/.venv/bin/python".into()),
            Some("/home/bob/proj/.venv/bin/python".into())
        ]
    );
    let facts: Vec<(&str, ChangeKind, Option<&str>, Option<&str>)> = r
        .changes
        .iter()
        .map(|c| (c.fact.as_str(), c.change, c.a.as_deref(), c.b.as_deref()))
        .collect();
    assert_eq!(
        facts,
        vec![
            (
                "pythons[project-venv:.venv].packages[six]",
                ChangeKind::Changed,
                Some("1.16.0"),
                Some("1.17.0")
            ),
            (
                "pythons[project-venv:.venv].shadowed[six]",
                ChangeKind::Changed,
                Some("1.16.0 hides 1.15.0"),
                Some("1.17.0 hides 1.15.0")
            ),
        ],
        "no path or env drift from the home directories"
    );
    assert_eq!(r.changes[0].direction, Some(compare::Direction::Upgrade));
    assert_eq!(r.changes[0].size, Some(compare::Size::Minor));

    // alice and carol: same machine, different users: no drift.
    let (code, r) = compare_json(&[&t.dir.join("a.json"), &t.dir.join("c.json")], &[]);
    assert_eq!(code, 0, "{:?}", r.changes);
    cli::plain()
        .arg("compare")
        .arg(t.dir.join("a.json"))
        .arg(t.dir.join("c.json"))
        .assert()
        .code(0)
        .stdout(predicates::str::contains("no drift"));
}

#[test]
fn three_machine_fleet_with_one_outlier() {
    let t = two_homes();
    let files = [
        t.dir.join("a.json"),
        t.dir.join("b.json"),
        t.dir.join("c.json"),
    ];
    let refs: Vec<&Path> = files.iter().map(|p| p.as_path()).collect();
    let (code, r) = compare_json(&refs, &[]);
    assert_eq!(code, 1);
    assert_eq!(r.mode, compare::Mode::Fleet);
    let fleet = r.fleet.unwrap();
    let six = fleet
        .by_fact
        .iter()
        .find(|f| f.fact == "pythons[project-venv:.venv].packages[six]")
        .unwrap();
    assert_eq!(six.majority.as_deref(), Some("1.16.0"));
    assert_eq!((six.majority_count, six.compared), (2, 3));
    assert_eq!(six.outliers.len(), 1);
    assert!(six.outliers[0].machine.ends_with("b.json"));
    assert_eq!(six.outliers[0].value.as_deref(), Some("1.17.0"));
    assert_eq!(fleet.by_machine.len(), 1);
    assert!(fleet.by_machine[0].machine.ends_with("b.json"));
    assert_eq!(fleet.by_machine[0].differences.len(), 2);
}

#[test]
fn unmatched_interpreters_are_listed() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a.json");
    let b = tmp.path().join("b.json");
    snapshot_to(&fixture("site-venv-system"), "/home/u", &a);
    snapshot_to(&fixture("py-conda"), "/home/u", &b);
    let (code, r) = compare_json(&[&a, &b], &[]);
    assert_eq!(code, 1);
    assert!(r.summary.unmatched_interpreters > 0);
    let only_a: Vec<&str> = r
        .interpreters
        .iter()
        .filter(|g| g.members[0].is_some() && g.members[1].is_none())
        .map(|g| g.label.as_str())
        .collect();
    assert!(only_a.contains(&"project-venv:.venv"), "{only_a:?}");
    let removed = r
        .changes
        .iter()
        .find(|c| c.fact == "pythons[project-venv:.venv]")
        .expect("the unmatched venv is one change, not one per package");
    assert_eq!(removed.change, ChangeKind::Removed);
    assert!(
        !r.changes
            .iter()
            .any(|c| c.fact.starts_with("pythons[project-venv:.venv].packages")),
        "packages of an unmatched interpreter are not listed one by one"
    );
    let text = cli::plain()
        .arg("compare")
        .args([&a, &b])
        .output()
        .unwrap()
        .stdout;
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains("only on A") && text.contains("only on B"),
        "{text}"
    );
}

#[test]
fn volatile_facts_only_with_all() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a.json");
    let b = tmp.path().join("b.json");
    snapshot_to(&fixture("host-docker-noavx"), "/home/u", &a);
    // Same machine, a later time.
    let mut s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&a).unwrap()).unwrap();
    s["collected_at"] = "2099-01-01T00:00:00Z".into();
    s["host"]["live"]["memory_available_mib"] = 1.into();
    std::fs::write(&b, serde_json::to_string(&s).unwrap()).unwrap();
    cli::plain().arg("compare").args([&a, &b]).assert().code(0);
    let (code, r) = compare_json(&[&a, &b], &["--all"]);
    assert_eq!(code, 1);
    let facts: Vec<&str> = r.changes.iter().map(|c| c.fact.as_str()).collect();
    assert_eq!(
        facts,
        vec!["host.live.memory_available_mib", "collected_at"]
    );
}

/// Run compare on `files`; expect exit 2 and a stderr naming `names` and saying `what`.
fn refused(files: &[&Path], names: &Path, what: &str) {
    let o = cli::plain().arg("compare").args(files).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(o.stdout.is_empty(), "nothing on stdout");
    assert!(
        err.contains(&names.display().to_string()) && err.contains(what),
        "expected {} and {what:?} in: {err}",
        names.display()
    );
}

#[test]
fn bad_input_is_refused_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let good = d.join("good.json");
    snapshot_to(&fixture("host-docker-noavx"), "/home/u", &good);
    let text = std::fs::read_to_string(&good).unwrap();
    let write = |name: &str, body: &str| {
        let p = d.join(name);
        std::fs::write(&p, body).unwrap();
        p
    };
    let missing = d.join("missing.json");
    refused(&[&good, &missing], &missing, "no such file");
    let empty = write("empty.json", "");
    refused(&[&good, &empty], &empty, "empty");
    let truncated = write("truncated.json", &text[..text.len() / 2]);
    refused(&[&truncated, &good], &truncated, "not valid JSON");
    let other = write("other.json", "{\"name\": \"not a snapshot\"}");
    refused(&[&good, &other], &other, "not an envdoctor snapshot");
    let array = write("array.json", "[1, 2, 3]");
    refused(&[&good, &array], &array, "not an envdoctor snapshot");
    let wrong_shape = write("shape.json", "{\"schema_version\": 1, \"pythons\": 3}");
    refused(&[&good, &wrong_shape], &wrong_shape, "not a valid snapshot");
    let current = format!(
        "\"schema_version\": {}",
        envdoctor::snapshot::SCHEMA_VERSION
    );
    let newer = write(
        "newer.json",
        &text.replace(&current, "\"schema_version\": 7").replacen(
            "\"envdoctor_version\": \"0.1.0\"",
            "\"envdoctor_version\": \"9.4.2\"",
            1,
        ),
    );
    refused(&[&good, &newer], &newer, "schema_version 7");
    let o = cli::plain()
        .arg("compare")
        .args([&good, &newer])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("9.4.2") && err.contains(env!("CARGO_PKG_VERSION")),
        "names both envdoctor versions: {err}"
    );
    let older = write(
        "older.json",
        &text.replace(&current, "\"schema_version\": 0"),
    );
    refused(&[&older, &good], &older, "schema_version 0");
    let binary = d.join("binary.json");
    std::fs::write(&binary, [0xff, 0xfe, 0x00, 0x01]).unwrap();
    refused(&[&good, &binary], &binary, "not UTF-8");
    refused(&[&good, d], d, "directory");
    // A fleet stops at its first bad file too.
    refused(&[&good, &good, &empty], &empty, "empty");

    // One file only: a usage error (clap), exit 2.
    cli::plain().arg("compare").arg(&good).assert().code(2);

    // The same file twice: no drift, exit 0, and a note naming it.
    let o = cli::plain()
        .arg("compare")
        .args([&good, &good])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("same file") && err.contains("good.json"),
        "{err}"
    );
    let (code, r) = compare_json(&[&good, &good], &[]);
    assert_eq!(code, 0);
    assert_eq!(r.machines[1].label, format!("{}#2", good.display()));
}

#[test]
fn verdict_hook_ranks_new_findings_first_on_real_snapshots() {
    let t = two_homes();
    let load = |f: &str| {
        let p = t.dir.join(f);
        (p.display().to_string(), compare::load(&p).unwrap())
    };
    let snaps = vec![load("a.json"), load("b.json")];
    // A stand-in rule: six >= 1.17 in the project venv breaks something.
    let rule = |s: &Snapshot| -> Vec<Verdict> {
        s.pythons
            .iter()
            .filter(|p| p.package("six").is_some_and(|p| p.version == "1.17.0"))
            .map(|p| Verdict {
                rule_id: "six-1.17".into(),
                severity: "error".into(),
                title: "six 1.17 drops a shim".into(),
                message: format!("{} imports six 1.17.0", p.path),
                subject: Some(format!("pythons[{}]", p.path)),
            })
            .collect()
    };
    let r = compare::compare(&snaps, &CompareOptions::default(), Some(&rule)).unwrap();
    assert!(r.options.verdicts);
    assert_eq!(r.changes[0].rank, Rank::Verdict);
    assert_eq!(r.changes[0].change, ChangeKind::New);
    assert_eq!(
        r.changes[0].fact, "verdicts[six-1.17] pythons[project-venv:.venv]",
        "the interpreter by its role, not its path"
    );
    assert_eq!(r.summary.new_findings, 1);
    let text = envdoctor::report::compare::render_text(&r, false);
    assert!(text.contains("B will hit: six 1.17 drops a shim"), "{text}");
    // Reversed, the finding is fixed.
    let rev = vec![snaps[1].clone(), snaps[0].clone()];
    let r = compare::compare(&rev, &CompareOptions::default(), Some(&rule)).unwrap();
    assert_eq!(r.changes[0].change, ChangeKind::Fixed);
    assert_eq!(r.summary.fixed_findings, 1);
}

#[test]
fn help_documents_formats_sections_and_exit_codes() {
    let o = cli::plain().args(["compare", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&o.stdout);
    for word in [
        "--format",
        "--all",
        "--only",
        "markdown",
        "packages",
        "Exit codes",
        "majority",
    ] {
        assert!(help.contains(word), "{word} in help:\n{help}");
    }
}

#[test]
fn colour_only_when_asked_and_never_under_no_color() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/snapshots/compare");
    let run = |no_color: Option<&str>| {
        let mut c = cli::cmd();
        c.current_dir(&dir)
            .env("CLICOLOR_FORCE", "1")
            .args(["compare", "a.json", "b.json"]);
        if let Some(v) = no_color {
            c.env("NO_COLOR", v);
        }
        String::from_utf8(c.output().unwrap().stdout).unwrap()
    };
    assert!(
        run(None).contains('\u{1b}'),
        "CLICOLOR_FORCE colours a pipe"
    );
    assert!(!run(Some("1")).contains('\u{1b}'), "NO_COLOR wins");
    // Piped, not forced: plain (the default case of every other test here).
    let plain = cli::cmd()
        .current_dir(&dir)
        .args(["compare", "a.json", "b.json"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&plain.stdout).contains('\u{1b}'));
}

/// The shipped rule pack ranks first the drift that changes a verdict: torch 2.5 -> 2.6 makes a
/// checkpoint that pickles a class unloadable by default.
#[test]
fn the_shipped_rules_rank_a_new_finding_first() {
    let dir = tempfile::tempdir().unwrap();
    let snap = |torch: &str| {
        serde_json::json!({
            "schema_version": 1, "envdoctor_version": "0.1.0",
            "pythons": [{"path": "/opt/venv/bin/python", "exists": true, "kind": "venv", "sources": [],
                "include_system_site_packages": false,
                "packages": [{"name": "torch", "version": torch, "version_valid": true,
                    "location": "/opt/venv/lib/python3.11/site-packages", "metadata": "/m"}]}],
            "checkpoints": [{"path": "/data/last.pt", "format": "torch-zip",
                "torch": {"zip": true, "globals": ["__main__.Cfg"], "unsafe_globals": ["__main__.Cfg"],
                          "needs_weights_only_false": true, "storage_count": 1}}]
        })
        .to_string()
    };
    let a = dir.path().join("a.json");
    let b = dir.path().join("b.json");
    std::fs::write(&a, snap("2.5.1")).unwrap();
    std::fs::write(&b, snap("2.6.0")).unwrap();
    let out = cli::plain()
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    let hit = text
        .find("B will hit: torch checkpoint that torch.load(weights_only=True) refuses")
        .unwrap_or_else(|| panic!("{text}"));
    let pkg = text
        .find("packages[torch]  2.5.1  ->  2.6.0")
        .unwrap_or_else(|| panic!("{text}"));
    assert!(hit < pkg, "the verdict comes first:\n{text}");
    let out = cli::plain()
        .args(["compare", "--no-rules"])
        .arg(&a)
        .arg(&b)
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains("B will hit"));
}

/// A finding is matched by the role of the interpreter it is about, not by its path: the same
/// machine with its project checked out elsewhere (`/srv/ci-7/checkout`, not under a home) keeps
/// `package-shadowed-by-other-site-dir` on its project venv, which is no drift in verdicts (it
/// was "1 new, 1 fixed" while subjects were paths).
#[test]
fn a_finding_on_the_same_venv_at_another_path_is_neither_new_nor_fixed() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/snapshots/compare");
    let a = dir.join("a.json");
    let tmp = tempfile::tempdir().unwrap();
    let moved = tmp.path().join("moved.json");
    let text = std::fs::read_to_string(&a).unwrap();
    assert!(text.contains("/home/alice/proj/.venv"));
    std::fs::write(
        &moved,
        text.replace("/home/alice/proj", "/srv/ci-7/checkout"),
    )
    .unwrap();
    // The rule fires on both machines, on the project venv at each one's path.
    for (snap, venv) in [
        (&a, "/home/alice/proj/.venv/bin/python"),
        (&moved, "/srv/ci-7/checkout/.venv/bin/python"),
    ] {
        let out = cli::plain()
            .args(["check", "--format", "json", "--from"])
            .arg(snap)
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let subjects: Vec<&str> = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["rule"] == "package-shadowed-by-other-site-dir")
            .filter_map(|f| f["subject"].as_str())
            .collect();
        assert_eq!(subjects, vec![format!("pythons[{venv}]")], "{snap:?}");
    }
    let (code, r) = compare_json(&[&a, &moved], &[]);
    assert_eq!(code, 1, "the paths did change");
    assert!(r.options.verdicts);
    assert_eq!(
        (r.summary.new_findings, r.summary.fixed_findings),
        (0, 0),
        "{:#?}",
        r.changes
    );
    assert!(r.changes.iter().all(|c| c.rank != Rank::Verdict));
    assert!(r
        .changes
        .iter()
        .any(|c| c.fact == "pythons[project-venv:.venv].path"));
}
