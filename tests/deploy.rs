//! The recipes in `deploy/` and `action.yml`, run as far as a machine without Kubernetes, Slurm,
//! systemd as init or GitHub allows: manifests parsed, the commands each config names run for
//! real against fixture machines (with a fake `scontrol` recording its arguments), unit files
//! checked by `systemd-analyze verify`, the textfile read by promtool and served by a real
//! node-exporter, the Action's steps checked by `bash -n` and its check step run.

use crate::common::formats::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn deploy(rel: &str) -> PathBuf {
    repo().join("deploy").join(rel)
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A YAML file's documents as JSON, read by PyYAML.
fn yaml_docs(py: &Path, file: &Path) -> Vec<Value> {
    let (code, out, err) = python(
        py,
        "import json, sys, yaml\nprint(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))",
        &[file.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{} is not YAML: {err}", file.display());
    serde_json::from_str(&out).unwrap()
}

// ---- Kubernetes: node-problem-detector ------------------------------------------------------

fn npd_config() -> Value {
    let text = std::fs::read_to_string(deploy("kubernetes/envdoctor-plugin-monitor.json")).unwrap();
    serde_json::from_str(&text).expect("the plugin config is JSON")
}

/// Run the command the config's rule names, as NPD would: `path` (the ConfigMap is mounted at
/// /config, which here is deploy/kubernetes/) with `args`, `/host` being a fixture machine.
fn run_npd_rule(host: &Path, max: u64) -> (i32, String) {
    let cfg = npd_config();
    let rule = &cfg["rules"][0];
    let path = rule["path"].as_str().unwrap();
    let script = deploy("kubernetes").join(path.strip_prefix("/config/").expect("under /config"));
    let args: Vec<String> = rule["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let a = a.as_str().unwrap();
            if a == "/host" {
                host.display().to_string()
            } else {
                a.to_string()
            }
        })
        .collect();
    let out = Command::new(&script)
        .args(&args)
        .env("ENVDOCTOR", bin())
        .env("ENVDOCTOR_NPD_MAX_OUTPUT", max.to_string())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(
        stdout.len() as u64 <= max,
        "{} bytes > max_output_length {max}: {stdout:?}",
        stdout.len()
    );
    assert_eq!(stdout.lines().count(), 1, "one line: {stdout:?} {stderr}");
    (out.status.code().unwrap_or(-1), stdout)
}

#[test]
fn npd_plugin_speaks_the_custom_plugin_protocol_on_fixture_machines() {
    let cfg = npd_config();
    assert_eq!(cfg["plugin"], "custom");
    let max = cfg["pluginConfig"]["max_output_length"].as_u64().unwrap();
    assert_eq!(cfg["rules"][0]["condition"], cfg["conditions"][0]["type"]);

    // A problem: exit 1, the most severe finding as the message.
    let (code, msg) = run_npd_rule(&machine("lib-cuda111-cusolver"), max);
    assert_eq!(code, 1, "{msg}");
    assert!(
        msg.starts_with("envdoctor: tf24-cusolver-10-on-cuda-11-1: TensorFlow 2.4 asks"),
        "{msg}"
    );
    // OK: exit 0, even with a warning below the threshold.
    let (code, msg) = run_npd_rule(&machine("gpu-in-container"), max);
    assert_eq!(code, 0, "{msg}");
    assert_eq!(
        msg,
        "envdoctor: OK: 0 errors, 0 warnings, 0 info (0 probe problems)\n"
    );
    let (code, msg) = run_npd_rule(&machine("site-debian"), max);
    assert_eq!(code, 0, "{msg}");
    // envdoctor cannot check: unknown (2), saying why.
    let dir = tempfile::tempdir().unwrap();
    let (code, msg) = run_npd_rule(&dir.path().join("no-such-host"), max);
    assert_eq!(code, 2, "{msg}");
    assert!(msg.starts_with("envdoctor could not check: "), "{msg}");
    // A small limit is honoured.
    let (code, msg) = run_npd_rule(&machine("lib-cuda111-cusolver"), 24);
    assert_eq!(code, 1);
    assert_eq!(msg, "envdoctor: tf24-cusolve\n");
}

#[test]
fn npd_manifest_parses_and_ships_the_plugin_files_verbatim() {
    let Some(py) = validators() else { return };
    let docs = yaml_docs(&py, &deploy("kubernetes/envdoctor-npd.yaml"));
    let kind = |k: &str| {
        docs.iter()
            .find(|d| d["kind"] == k)
            .unwrap_or_else(|| panic!("no {k}"))
            .clone()
    };
    let cm = kind("ConfigMap");
    let script = std::fs::read_to_string(deploy("kubernetes/envdoctor-npd-plugin.sh")).unwrap();
    assert_eq!(cm["data"]["envdoctor-npd-plugin.sh"], script.as_str());
    let cfg: Value = serde_json::from_str(
        cm["data"]["envdoctor-plugin-monitor.json"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(cfg, npd_config());

    let ds = kind("DaemonSet");
    assert_eq!(ds["apiVersion"], "apps/v1");
    let pod = &ds["spec"]["template"]["spec"];
    assert_eq!(
        ds["spec"]["selector"]["matchLabels"],
        ds["spec"]["template"]["metadata"]["labels"]
    );
    let c = &pod["containers"][0];
    let command: Vec<&str> = c["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        command.contains(&"--config.custom-plugin-monitor=/config/envdoctor-plugin-monitor.json")
    );
    let env = |name: &str| {
        c["env"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == name)
            .unwrap_or_else(|| panic!("env {name}"))["value"]
            .clone()
    };
    assert_eq!(
        env("ENVDOCTOR_NPD_MAX_OUTPUT"),
        cfg["pluginConfig"]["max_output_length"]
            .to_string()
            .as_str()
    );
    // The binary the plugin runs is where the init container installs it.
    let envdoctor = env("ENVDOCTOR");
    let init = &pod["initContainers"][0];
    let target_pos = init["command"]
        .as_array()
        .unwrap()
        .iter()
        .position(|a| a == "--target")
        .unwrap();
    let target = init["command"][target_pos + 1].as_str().unwrap();
    assert_eq!(envdoctor, format!("{target}/bin/envdoctor").as_str());
    // Mounts: /config from the ConfigMap (executable), /host from the node's / (read-only).
    let mount = |path: &str| {
        c["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["mountPath"] == path)
            .unwrap_or_else(|| panic!("mount {path}"))
            .clone()
    };
    let volume = |name: &Value| {
        pod["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| &v["name"] == name)
            .unwrap()
            .clone()
    };
    let config = volume(&mount("/config")["name"]);
    assert_eq!(config["configMap"]["name"], cm["metadata"]["name"]);
    assert_eq!(config["configMap"]["defaultMode"], 0o755);
    let host = mount("/host");
    assert_eq!(host["readOnly"], true);
    assert_eq!(volume(&host["name"])["hostPath"]["path"], "/");
    assert!(cfg["rules"][0]["path"]
        .as_str()
        .unwrap()
        .starts_with("/config/"));
    assert_eq!(
        cfg["rules"][0]["args"],
        serde_json::json!(["--root", "/host"])
    );
    let binding = kind("ClusterRoleBinding");
    assert_eq!(binding["subjects"][0]["name"], pod["serviceAccountName"]);
}

// ---- Slurm ----------------------------------------------------------------------------------

/// A fake `scontrol` that records its arguments, one per line.
fn fake_scontrol(dir: &Path) -> PathBuf {
    let record = dir.join("scontrol.args");
    let fake = dir.join("scontrol");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" >> '{}'\n",
            record.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    record
}

fn slurm_check(
    root: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (i32, Option<Vec<String>>, String) {
    let dir = tempfile::tempdir().unwrap();
    let record = fake_scontrol(dir.path());
    let path = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut c = Command::new(deploy("slurm/envdoctor-slurm-check.sh"));
    c.arg("--root")
        .arg(root)
        .args(extra)
        .env("PATH", path)
        .env("ENVDOCTOR", bin())
        .env("SLURMD_NODENAME", "gpu07")
        .env_remove("SCONTROL");
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    let args = std::fs::read_to_string(&record)
        .ok()
        .map(|s| s.lines().map(String::from).collect());
    (out.status.code().unwrap_or(-1), args, text(&out).1)
}

#[test]
fn slurm_check_drains_the_node_with_the_finding_as_reason() {
    let (code, args, err) = slurm_check(&machine("lib-cuda111-cusolver"), &[], &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        args.expect("scontrol was called"),
        vec![
            "update",
            "NodeName=gpu07",
            "State=DRAIN",
            "Reason=envdoctor: tf24-cusolver-10-on-cuda-11-1: TensorFlow 2.4 asks for libcusolver.so.10, and the CUDA here ships libcusolver.so.11 [1 error, 1 warning, 0 info]",
        ]
    );
    // As a Prolog that should also fail the job.
    let (code, args, _) = slurm_check(
        &machine("lib-cuda111-cusolver"),
        &[],
        &[("ENVDOCTOR_FAIL_JOB", "1")],
    );
    assert_eq!(code, 1);
    assert!(args.is_some());
    // Healthy, or only warnings: the node is left alone.
    for m in ["gpu-in-container", "site-debian"] {
        let (code, args, err) = slurm_check(&machine(m), &[], &[]);
        assert_eq!((code, args), (0, None), "{m}: {err}");
    }
    // Options reach envdoctor: with --fail-on warning, a warning drains.
    let (code, args, _) = slurm_check(&machine("site-debian"), &["--fail-on", "warning"], &[]);
    assert_eq!(code, 0);
    let args = args.expect("drained on a warning");
    assert!(
        args[3].starts_with("Reason=envdoctor: requirement-not-installed: "),
        "{args:?}"
    );
    // envdoctor cannot check: no drain (a broken install must not drain the fleet), said why.
    let dir = tempfile::tempdir().unwrap();
    let (code, args, err) = slurm_check(&dir.path().join("missing"), &[], &[]);
    assert_eq!((code, args), (0, None));
    assert!(
        err.contains("envdoctor could not check gpu07 (exit 2)"),
        "{err}"
    );
}

// ---- systemd + node-exporter ----------------------------------------------------------------

/// `Key=value` lines of a unit file (the last one wins, as systemd reads single-valued keys).
fn unit_value(unit: &str, key: &str) -> String {
    unit.lines()
        .filter_map(|l| l.strip_prefix(&format!("{key}=")))
        .next_back()
        .unwrap_or_else(|| panic!("no {key}="))
        .to_string()
}

/// Run the service's ExecStart with its Environment, the textfile directory replaced by `dir`
/// and ENVDOCTOR by the binary under test; `extra` appended.
fn exec_start(dir: &Path, extra: &[&str], envdoctor: &Path) -> Output {
    let unit = std::fs::read_to_string(deploy("systemd/envdoctor-textfile.service")).unwrap();
    let exec = unit_value(&unit, "ExecStart");
    let mut words = exec.split_whitespace();
    let program = words.next().unwrap();
    let installed = "/usr/local/lib/envdoctor/envdoctor-textfile.sh";
    assert_eq!(program, installed, "the install line in the unit's comment");
    let textfile_dir = unit_value(&unit, "ReadWritePaths");
    let args: Vec<String> = words
        .map(|w| {
            if w == textfile_dir {
                dir.display().to_string()
            } else {
                w.to_string()
            }
        })
        .collect();
    assert_eq!(args, vec![dir.display().to_string()]);
    let env = unit_value(&unit, "Environment");
    assert_eq!(env, "ENVDOCTOR=/usr/local/bin/envdoctor");
    Command::new(deploy("systemd/envdoctor-textfile.sh"))
        .args(&args)
        .args(extra)
        .env("ENVDOCTOR", envdoctor)
        .output()
        .unwrap()
}

#[test]
fn systemd_units_verify_and_exec_start_writes_a_textfile_promtool_accepts() {
    let Some(promtool) = need_tool("promtool", "prometheus") else {
        return;
    };
    if let Some(analyze) = need_tool("systemd-analyze", "systemd") {
        // Verified as installed: the script where ExecStart names it.
        let units = tempfile::tempdir().unwrap();
        let service = std::fs::read_to_string(deploy("systemd/envdoctor-textfile.service"))
            .unwrap()
            .replace(
                "/usr/local/lib/envdoctor/envdoctor-textfile.sh",
                deploy("systemd/envdoctor-textfile.sh").to_str().unwrap(),
            );
        std::fs::write(units.path().join("envdoctor-textfile.service"), service).unwrap();
        std::fs::copy(
            deploy("systemd/envdoctor-textfile.timer"),
            units.path().join("envdoctor-textfile.timer"),
        )
        .unwrap();
        let out = Command::new(&analyze)
            .args(["verify", "--man=no"])
            .arg(units.path().join("envdoctor-textfile.service"))
            .arg(units.path().join("envdoctor-textfile.timer"))
            .output()
            .unwrap();
        let (o, e) = text(&out);
        assert!(out.status.success() && e.trim().is_empty(), "{o}{e}");
    }

    let dir = tempfile::tempdir().unwrap();
    // This machine, as the timer runs it.
    let out = exec_start(dir.path(), &[], &bin());
    assert!(out.status.success(), "{:?}", text(&out));
    let prom = dir.path().join("envdoctor.prom");
    let check = |path: &Path| {
        let out = Command::new(&promtool)
            .args(["check", "metrics"])
            .stdin(std::fs::File::open(path).unwrap())
            .output()
            .unwrap();
        assert!(out.status.success(), "promtool: {:?}", text(&out));
    };
    check(&prom);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&prom).unwrap().permissions().mode() & 0o777,
        0o644
    );
    // A machine with findings: written all the same (findings are the metrics, not a failure).
    let out = exec_start(
        dir.path(),
        &["--root", machine("lib-cuda111-cusolver").to_str().unwrap()],
        &bin(),
    );
    assert!(out.status.success(), "{:?}", text(&out));
    check(&prom);
    let body = std::fs::read_to_string(&prom).unwrap();
    assert!(body.contains(
        "envdoctor_findings{rule=\"tf24-cusolver-10-on-cuda-11-1\",severity=\"error\"} 1\n"
    ));
    // envdoctor cannot check: the unit fails, the last good file stays, no temporary is left.
    let out = exec_start(dir.path(), &["--root", "/no/such/dir"], &bin());
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&prom).unwrap(), body);
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["envdoctor.prom"]);
}

/// Kills the child when dropped.
struct Running(std::process::Child);
impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn http_get(port: u16, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut body = String::new();
    s.read_to_string(&mut body).ok()?;
    Some(body)
}

#[test]
fn node_exporter_serves_the_textfile() {
    let Some(exporter) = need_tool("prometheus-node-exporter", "prometheus-node-exporter") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = exec_start(
        dir.path(),
        &["--root", machine("lib-cuda111-cusolver").to_str().unwrap()],
        &bin(),
    );
    assert!(out.status.success(), "{:?}", text(&out));
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(exporter)
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .arg("--collector.disable-defaults")
        .arg("--collector.textfile")
        .arg(format!(
            "--collector.textfile.directory={}",
            dir.path().display()
        ))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _running = Running(child);
    let mut body = None;
    for _ in 0..100 {
        if let Some(b) = http_get(port, "/metrics") {
            body = Some(b);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let body = body.expect("node-exporter answers");
    assert!(body.contains("node_textfile_scrape_error 0"), "{body}");
    assert!(
        body.contains(
            "envdoctor_findings{rule=\"tf24-cusolver-10-on-cuda-11-1\",severity=\"error\"} 1"
        ),
        "{body}"
    );
    assert!(body.contains("envdoctor_check_failed 1"), "{body}");
    assert!(
        body.contains("# TYPE envdoctor_last_run_seconds gauge"),
        "{body}"
    );
}

// ---- GitHub Action --------------------------------------------------------------------------

#[test]
fn action_parses_its_steps_are_bash_and_the_check_step_annotates() {
    let Some(py) = validators() else { return };
    let action = &yaml_docs(&py, &repo().join("action.yml"))[0];
    assert_eq!(action["runs"]["using"], "composite");
    // No default package: a release tag of the action, or `version`/`wheel`/`package`.
    for input in ["version", "wheel", "package"] {
        assert_eq!(action["inputs"][input]["default"], "", "{input}");
    }
    let steps = action["runs"]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    for step in steps {
        assert_eq!(step["shell"], "bash");
        let script = step["run"].as_str().unwrap();
        // Inputs reach scripts through env, never pasted into the script (no injection).
        assert!(!script.contains("${{"), "{script}");
        let out = Command::new("bash")
            .args(["-n", "-c", script])
            .output()
            .unwrap();
        assert!(out.status.success(), "bash -n: {:?}\n{script}", text(&out));
    }
    assert_eq!(
        action["outputs"]["exit-code"]["value"],
        "${{ steps.check.outputs.exit-code }}"
    );
    let check = steps.iter().find(|s| s["id"] == "check").unwrap();
    assert_eq!(check["env"]["ENVDOCTOR_ARGS"], "${{ inputs.args }}");
    assert_eq!(check["env"]["ENVDOCTOR_FAIL_ON"], "${{ inputs.fail-on }}");

    // The check step, run as the runner would after the install step.
    let runner_temp = tempfile::tempdir().unwrap();
    let venv_bin = runner_temp.path().join("envdoctor-venv/bin");
    std::fs::create_dir_all(&venv_bin).unwrap();
    std::os::unix::fs::symlink(bin(), venv_bin.join("envdoctor")).unwrap();
    let run = |args: &str, fail_on: &str| {
        let output_file = runner_temp.path().join("github_output");
        let _ = std::fs::remove_file(&output_file);
        let out = Command::new("bash")
            .args(["-e", "-c", check["run"].as_str().unwrap()])
            .env("RUNNER_TEMP", runner_temp.path())
            .env("GITHUB_OUTPUT", &output_file)
            .env("ENVDOCTOR_ARGS", args)
            .env("ENVDOCTOR_FAIL_ON", fail_on)
            .output()
            .unwrap();
        let outputs = std::fs::read_to_string(&output_file).unwrap_or_default();
        (out.status.code(), text(&out).0, outputs)
    };
    let root = machine("lib-cuda111-cusolver");
    let (code, stdout, outputs) = run(&format!("--root {}", root.display()), "error");
    assert_eq!(code, Some(1), "{stdout}");
    assert!(stdout.starts_with("::error file="), "{stdout}");
    assert!(
        stdout.contains("title=tf24-cusolver-10-on-cuda-11-1%3A"),
        "{stdout}"
    );
    assert_eq!(outputs, "exit-code=1\n");
    let (code, _, outputs) = run(&format!("--root {}", root.display()), "never");
    assert_eq!(code, Some(0));
    assert_eq!(outputs, "exit-code=0\n");
}

#[test]
fn deploy_scripts_and_action_steps_pass_shellcheck() {
    let Some(shellcheck) = need_tool("shellcheck", "shellcheck") else {
        return;
    };
    let mut scripts: Vec<PathBuf> = ["kubernetes", "slurm", "systemd"]
        .iter()
        .flat_map(|d| std::fs::read_dir(deploy(d)).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sh"))
        .collect();
    scripts.sort();
    assert_eq!(scripts.len(), 3, "{scripts:?}");
    scripts.push(repo().join("action/install.sh"));
    let out = Command::new(&shellcheck).args(&scripts).output().unwrap();
    assert!(out.status.success(), "{:?}", text(&out));
    // The Action's run steps, as the bash GitHub runs them with.
    if let Some(py) = validators() {
        let action = &yaml_docs(&py, &repo().join("action.yml"))[0];
        for step in action["runs"]["steps"].as_array().unwrap() {
            let mut child = Command::new(&shellcheck)
                .args(["--shell=bash", "-"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            use std::io::Write;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(step["run"].as_str().unwrap().as_bytes())
                .unwrap();
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
    }
}

/// `action/install.sh` with `vars`, as the Action's install step runs it: (exit code, stdout,
/// the venv directory).
pub fn action_install(vars: &[(&str, &str)]) -> (i32, String, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let mut c = Command::new("bash");
    c.arg(repo().join("action/install.sh"))
        .arg(tmp.path().join("envdoctor-venv"))
        .env_remove("ENVDOCTOR_WHEEL")
        .env_remove("ENVDOCTOR_VERSION")
        .env_remove("ENVDOCTOR_PACKAGE")
        .env_remove("ENVDOCTOR_ACTION_REF");
    for (k, v) in vars {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    (out.status.code().unwrap_or(-1), text(&out).0, tmp)
}

/// The Action's inputs (read with serde-saphyr, no PyPI) reach its install script, and a
/// missing package fails the step with one error annotation that says what to give instead.
#[test]
fn action_install_fails_clearly_when_the_package_is_missing() {
    let yaml = std::fs::read_to_string(repo().join("action.yml")).unwrap();
    let action: Value = serde_saphyr::from_str(&yaml).unwrap();
    let install = &action["runs"]["steps"][0];
    assert_eq!(
        install["run"],
        "bash \"$GITHUB_ACTION_PATH/action/install.sh\" \"$RUNNER_TEMP/envdoctor-venv\""
    );
    for (var, input) in [
        ("ENVDOCTOR_WHEEL", "${{ inputs.wheel }}"),
        ("ENVDOCTOR_VERSION", "${{ inputs.version }}"),
        ("ENVDOCTOR_PACKAGE", "${{ inputs.package }}"),
        ("ENVDOCTOR_ACTION_REF", "${{ github.action_ref }}"),
    ] {
        assert_eq!(install["env"][var], input);
    }
    let annotation = |out: &str| -> String {
        let lines: Vec<&str> = out.lines().filter(|l| l.starts_with("::error")).collect();
        assert_eq!(lines.len(), 1, "{out}");
        lines[0].to_string()
    };
    // Nothing named, and a branch ref: say what to give.
    let (code, out, _) = action_install(&[("ENVDOCTOR_ACTION_REF", "main")]);
    assert_eq!(code, 1, "{out}");
    let e = annotation(&out);
    assert!(
        e.starts_with("::error title=envdoctor was not installed::"),
        "{e}"
    );
    assert!(e.contains("`version`") && e.contains("`wheel`"), "{e}");
    assert!(
        e.contains("not on PyPI before its first PyPI release"),
        "{e}"
    );
    // A wheel that is not there.
    let (code, out, _) = action_install(&[("ENVDOCTOR_WHEEL", "/nonexistent/envdoctor.whl")]);
    assert_eq!(code, 1);
    assert!(
        annotation(&out).contains("no wheel at /nonexistent/envdoctor.whl"),
        "{out}"
    );
    // A release with no such wheel (releases read from a local directory: file:// URLs).
    let releases = tempfile::tempdir().unwrap();
    let base = format!("file://{}", releases.path().display());
    let (code, out, _) = action_install(&[
        ("ENVDOCTOR_VERSION", "9.9.9"),
        ("ENVDOCTOR_RELEASES", &base),
    ]);
    assert_eq!(code, 1);
    let e = annotation(&out);
    assert!(
        e.contains("release v9.9.9 has no envdoctor_ml-9.9.9-py3-none-manylinux2014_"),
        "{e}"
    );
    assert!(e.contains("is 9.9.9 released?"), "{e}");
    // The action's own release tag is the default version.
    let (code, out, _) = action_install(&[
        ("ENVDOCTOR_ACTION_REF", "v9.9.8"),
        ("ENVDOCTOR_RELEASES", &base),
    ]);
    assert_eq!(code, 1);
    assert!(annotation(&out).contains("release v9.9.8 has no"), "{out}");
}
